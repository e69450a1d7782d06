"""The client's view of runs: what the daemon puts on the wire."""

from __future__ import annotations

import msgspec

from ontoflow.actors.orchestrator._queries import Waiters, trace_dicts
from ontoflow.actors.orchestrator.engine import TraceEntry
from ontoflow.protocols.client import RunStatus, client_from_frames, client_to_frames


def test_trace_entries_reach_a_client_as_the_maps_to_builtins_would_give() -> None:
    entries = [
        TraceEntry(step_id="s1", node="main", block="load", capability="acme.load", event="success",
                   action="JUMP:done", attempt=1, duration_ms=1.5, retries=0, reason=None, error=None,
                   prerequisite_of=None, started_ms=10, ended_ms=12, dropped_outputs=["x"]),
        TraceEntry(step_id="s2", node="main", block="done", capability="acme.done", event="failure",
                   action=None, attempt=2, duration_ms=0.0, retries=3, reason="error", error="boom",
                   prerequisite_of=None, started_ms=12, ended_ms=20),
    ]
    fast = client_to_frames(RunStatus(run_id="r", status="failed", trace=trace_dicts(entries)))
    plain = client_to_frames(RunStatus(run_id="r", status="failed", trace=[msgspec.to_builtins(e) for e in entries]))
    assert fast == plain
    decoded = client_from_frames(fast)
    assert decoded.trace[0]["block"] == "load" and decoded.trace[1]["retries"] == 3


def test_a_runs_end_releases_its_one_hold_as_it_releases_several() -> None:
    waiters = Waiters()
    watching: list[bool] = []
    waiters.on_watching = watching.append
    assert waiters.hold(b"c1", "r1", "watch", 0) is True
    assert waiters.ended("r1") == [b"c1"]
    assert waiters.statistics() == {"clients_waiting": 0, "requests_waiting": 0} and waiters.watches == 0
    assert watching == [True, False] and waiters.ended("r1") == []
    assert waiters.hold(b"c1", "r1", "status", 1) is True  # the same request, held again: not "already held"
    assert waiters.ended("r1") == [b"c1"] and waiters.expire(1 + waiters.lease_ms) == []
