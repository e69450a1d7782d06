"""A Ready's Cancels, bounded by the worker's slots, go first to what the Ready says the worker
holds, then to the attempts its replaced registration had in flight that it did not list
(review21a: those went first, and a Cancel only reaches one whose Invoke is still on its way,
so the worker's real stale steps past the bound kept running in slots counted as free)."""

from __future__ import annotations

from ontoflow.actors.orchestrator._ready_holding import stale_cancels
from ontoflow.protocols.messages import PROTOCOL_VERSION, Invoke, Ready


def _invoke(run_id: str) -> Invoke:
    return Invoke(run_id, "s1", 1, "t.cap", {}, None)  # positional, as the pool makes them


def test_the_steps_a_ready_holds_are_cancelled_before_the_orphans_it_did_not_list() -> None:
    ready = Ready(protocol=PROTOCOL_VERSION, worker_id="w1", capabilities=[], slots=2,
                  holding=[("held-1", "s1", 1), ("held-2", "s1", 1), ("kept", "s1", 1)])
    cancels = stale_cancels(ready, [_invoke("kept")], [_invoke("orphan-1"), _invoke("orphan-2")])
    assert [c.run_id for c in cancels] == ["held-1", "held-2"]


def test_the_orphans_get_what_the_bound_leaves() -> None:
    ready = Ready(protocol=PROTOCOL_VERSION, worker_id="w1", capabilities=[], slots=3, holding=[("held-1", "s1", 1)])
    cancels = stale_cancels(ready, [], [_invoke("orphan-1"), _invoke("held-1"), _invoke("orphan-2")])
    assert [c.run_id for c in cancels] == ["held-1", "orphan-1", "orphan-2"]  # once each
