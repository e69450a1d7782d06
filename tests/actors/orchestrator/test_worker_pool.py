"""The worker pool on its own: registration, credits, outcomes, liveness, the pending queue."""

from __future__ import annotations

from collections import deque
from typing import Any

import msgspec

from ontoflow.actors.orchestrator import Run, RunTable, WorkerPool
from ontoflow.actors.orchestrator.engine import (
    RunSubmitted,
    StepFinished,
    StepLost,
)
from ontoflow.protocols import Outcome
from ontoflow.protocols.messages import PROTOCOL_VERSION, Disconnect, Invoke, Ready, Welcome

from tests.actors.orchestrator.parts import CAP, Sent, one_step
from tests.actors.orchestrator.pool_harness import PoolHarness


def test_a_step_waits_for_a_worker_then_goes_to_it_and_its_outcome_becomes_a_fact() -> None:
    h = PoolHarness()
    d = h.start("r1")
    h.pool.dispatch(d, 0)
    assert h.pool.statistics()["steps_waiting"] == 1 and not h.sent.of(Invoke)
    h.ready(b"w1", now=5)
    assert h.sent.of(Welcome) and [i for i, _ in h.sent.of(Invoke)] == [b"w1"]
    assert h.pool.steps_in_flight() == 1
    h.pool.outcome(b"w1", Outcome(session=h.session(b"w1"), run_id="r1", step_id=d.step_id, attempt=d.attempt, event="success"), 7)
    [(run_id, fact)] = h.facts
    assert run_id == "r1" and isinstance(fact, StepFinished) and fact.now_ms == 7
    assert h.pool.steps_in_flight() == 0


def test_credits_hold_a_second_step_until_the_slot_frees() -> None:
    h = PoolHarness()
    h.ready(b"w1")
    first, second = h.start("r1"), h.start("r2")
    h.pool.dispatch(first, 0)
    h.pool.dispatch(second, 0)
    assert len(h.sent.of(Invoke)) == 1  # one slot
    h.pool.outcome(b"w1", Outcome(session=h.session(b"w1"), run_id="r1", step_id=first.step_id, attempt=first.attempt, event="success"), 1)
    assert [m.run_id for _, m in h.sent.of(Invoke)] == ["r1", "r2"]


def test_an_outcome_from_another_worker_is_ignored() -> None:
    h = PoolHarness()
    h.ready(b"w1")
    d = h.start("r1")
    h.pool.dispatch(d, 0)
    h.pool.outcome(b"w2", Outcome(session=h.session(b"w2"), run_id="r1", step_id=d.step_id, attempt=d.attempt, event="success"), 1)
    assert h.facts == [] and h.pool.steps_in_flight() == 1


def test_a_worker_of_another_protocol_is_refused() -> None:
    h = PoolHarness()
    h.pool.ready(b"old", Ready(protocol=PROTOCOL_VERSION + 1, worker_id="old"), 0)
    assert h.sent.of(Disconnect) and len(h.pool.registry) == 0


def test_a_worker_id_that_is_empty_huge_or_no_plain_word_is_refused_without_quoting_it() -> None:
    # Each was registered: an empty id, or a 100 KB one logged whole in every line about it.
    h = PoolHarness()
    for n, worker_id in enumerate(["", "w" * 100_000, "my worker", "-w", "w\n"]):
        h.pool.ready(b"x%d" % n, Ready(protocol=PROTOCOL_VERSION, worker_id=worker_id, capabilities=[CAP]), 0)
    refusals = h.sent.of(Disconnect)
    assert len(refusals) == 5 and len(h.pool.registry) == 0
    assert all("worker_id must be 1 to 256" in m.reason and "www" not in m.reason for _, m in refusals)
    h.ready(b"vm-1234-a1b2c3.example.com")  # a default id (HOST-PID-RANDOM) is a plain word
    assert len(h.pool.registry) == 1


def test_a_capability_a_worker_would_not_load_is_refused_when_a_peer_announces_it() -> None:
    # A peer that skips the worker's own load-time check (any peer, without CURVE) registered
    # an id like "../x y", or a retry policy no step could follow.
    h = PoolHarness()
    bad = [msgspec.structs.replace(CAP, id="../x y"), msgspec.structs.replace(CAP, id="c" * 300),
           msgspec.structs.replace(CAP, id="cap\n"), msgspec.structs.replace(CAP, id="a]" + "S" * 200),
           msgspec.structs.replace(CAP, retry=msgspec.structs.replace(CAP.retry, max_retries=-1)),
           msgspec.structs.replace(CAP, events=["done\n"]),
           msgspec.structs.replace(CAP, input_schema={"type": "object", "required": ["K" * 1_000_000]})]
    for n, meta in enumerate(bad):
        h.pool.ready(b"x%d" % n, Ready(protocol=PROTOCOL_VERSION, worker_id=f"w{n}", capabilities=[CAP, meta]), 0)
    reasons = [m.reason for _, m in h.sent.of(Disconnect)]
    assert len(reasons) == 7 and len(h.pool.registry) == 0
    assert [r.split(":")[0] for r in reasons] == ["capabilities[1].id"] * 4 + [
        "capabilities[1].retry.max_retries", "capabilities[1].events[0]", "capabilities[1].input_schema.required[0]"]
    assert all("../x" not in r and "ccc" not in r and "SSS" not in r and len(r) <= 200 for r in reasons)


def test_an_oversized_output_becomes_a_failure_before_it_is_a_fact() -> None:
    h = PoolHarness(max_value_bytes=10)
    h.ready(b"w1")
    d = h.start("r1")
    h.pool.dispatch(d, 0)
    h.pool.outcome(b"w1", Outcome(session=h.session(b"w1"), run_id="r1", step_id=d.step_id, attempt=d.attempt, event="success",
                                  outputs={"k": "x" * 100}), 1)
    [(_, fact)] = h.facts
    assert fact.outcome.event == "failure" and fact.outcome.reason == "output_too_large" and not fact.outcome.outputs


def test_an_output_nested_too_deep_is_a_failure_without_a_size_limit_too() -> None:
    # Before: the nesting bound was checked only with a size limit, which the embedded
    # cluster (``ontoflow run``, ``run_manifest``) never sets: a deep output failed later,
    # when the next Invoke or the fact's record was encoded.
    h = PoolHarness()
    assert h.pool.max_value_bytes is None
    h.ready(b"w1")
    d = h.start("r1")
    h.pool.dispatch(d, 0)
    deep: Any = 1
    for _ in range(200):
        deep = [deep]
    h.pool.outcome(b"w1", Outcome(session=h.session(b"w1"), run_id="r1", step_id=d.step_id, attempt=d.attempt, event="success",
                                  outputs={"k": deep}), 1)
    [(_, fact)] = h.facts
    assert fact.outcome.event == "failure" and fact.outcome.reason == "output_too_large" and not fact.outcome.outputs


def test_draining_holds_new_steps() -> None:
    h = PoolHarness()
    h.ready(b"w1")
    h.pool.draining = True
    h.pool.dispatch(h.start("r1"), 0)
    assert not h.sent.of(Invoke) and h.pool.statistics()["steps_waiting"] == 1


class _CountingDeque(deque):
    """A deque that counts how often an entry is read or taken (what a tick touches)."""

    touched = 0

    def __getitem__(self, index: Any) -> Any:
        _CountingDeque.touched += 1
        return super().__getitem__(index)

    def popleft(self) -> Any:
        _CountingDeque.touched += 1
        return super().popleft()

    def __iter__(self) -> Any:
        raise AssertionError("a tick must not scan the pending queue")


def test_a_tick_with_a_long_pending_queue_touches_only_the_expired_entries() -> None:
    h = PoolHarness(schedule_to_start_ms=100)
    for i in range(5_000):
        h.pool.dispatch(h.start(f"r{i}", now=i), i)  # one enqueued per millisecond
    queues = h.pool._pending._queues
    queues[CAP.id] = _CountingDeque(queues[CAP.id])
    for now in range(50, 100, 7):  # nothing expired yet: each tick reads one head entry
        h.pool.tick(now)
    assert h.facts == [] and _CountingDeque.touched <= 2 * len(range(50, 100, 7))
    _CountingDeque.touched = 0
    h.pool.tick(110)  # enqueued at 0..9 are now past the timeout
    assert [run_id for run_id, _ in h.facts] == [f"r{i}" for i in range(10)]
    assert _CountingDeque.touched <= 5 * 10 + 5  # a few reads per expired entry, none for the 4,990 others
    assert h.pool.statistics()["steps_waiting"] == 4_990


def test_a_cancelled_step_leaves_the_queue_without_a_rebuild() -> None:
    h = PoolHarness(schedule_to_start_ms=100)
    ds = [h.start(f"r{i}") for i in range(3)]
    for d in ds:
        h.pool.dispatch(d, 0)
    h.pool.cancel_step(ds[1].run_id, ds[1].step_id, ds[1].attempt)
    assert h.pool.statistics()["steps_waiting"] == 2
    h.ready(b"w1", now=1, slots=3)
    assert [m.run_id for _, m in h.sent.of(Invoke)] == ["r0", "r2"]
def test_an_outcome_without_the_session_token_is_ignored_and_a_ready_without_it_takes_nothing_over() -> None:
    h = PoolHarness()
    d = h.start("r1")
    h.ready(b"w1")
    h.pool.dispatch(d, 0)
    token = h.session(b"w1")
    assert token
    forged = Outcome(run_id="r1", step_id=d.step_id, attempt=d.attempt, event="success", outputs={"x": "forged"})
    h.pool.outcome(b"w1", forged, 1)
    assert not h.facts and h.pool.refused["outcome_session"] == 1
    h.ready(b"w1", holding=[("r1", d.step_id, d.attempt)], session=token)  # the worker itself, on a new socket
    assert h.session(b"w1") == token and h.pool.steps_in_flight() == 1
    h.ready(b"w1", holding=[("r1", d.step_id, d.attempt)])  # without the token: it claims nothing
    assert h.pool.refused["takeover"] == 1 and h.session(b"w1") not in ("", token)
    assert h.pool.steps_in_flight() == 0 and [type(f).__name__ for _, f in h.facts] == ["StepLost"]
    h.pool.outcome(b"w1", Outcome(run_id="r1", step_id=d.step_id, attempt=d.attempt, event="success",
                                  session=h.session(b"w1")), 2)
    assert len(h.facts) == 1  # the attempt was not handed to the new session


def test_registered_workers_are_capped_and_a_silent_one_frees_its_place() -> None:
    h = PoolHarness(max_workers=2, heartbeat_ms=100, liveness=3)
    h.ready(b"w1")
    h.ready(b"w2")
    h.ready(b"w3")
    assert len(h.pool.registry) == 2 and h.pool.refused["too_many_workers"] == 1
    assert [(i, "limit of 2 workers" in m.reason) for i, m in h.sent.of(Disconnect)] == [(b"w3", True)]
    h.ready(b"w1", now=50, session=h.session(b"w1"))  # one registered already announces itself again
    assert len(h.pool.registry) == 2 and h.pool.refused["too_many_workers"] == 1
    h.pool.seen(b"w1", 350, h.session(b"w1"))
    h.pool.tick(400)  # w2 silent past liveness x heartbeat: purged at the next tick
    h.pool.seen(b"w1", 400, h.session(b"w1"))
    h.pool.tick(410)
    h.ready(b"w3", now=400)
    assert sorted(w.worker_id for w in h.pool.registry) == ["w1", "w3"]


def test_an_invoke_the_router_refused_is_sent_again_not_lost_when_its_worker_registers_again_or_goes() -> None:
    h = PoolHarness(heartbeat_ms=10, liveness=3)
    h.ready(b"w1", now=0, session="old-token")
    d = h.start("r1")
    h.pool.dispatch(d, 0)
    [(_, invoke)] = h.sent.of(Invoke)
    h.pool.undelivered(b"w1", [invoke])  # its connection was gone: it never got it
    # It registers again (our Welcome was lost too), holding nothing: the step is sent again.
    h.ready(b"w1", now=5, session="old-token")
    assert h.facts == [] and [i for i, _ in h.sent.of(Invoke)] == [b"w1", b"w1"]
    assert h.pool.steps_in_flight() == 1
    # Refused again, and the worker goes silent: another worker gets it, still not lost.
    h.pool.undelivered(b"w1", [invoke])
    h.ready(b"w2", now=6)
    h.pool.seen(b"w2", 40, h.session(b"w2"))
    h.pool.tick(40)
    h.pool.seen(b"w2", 50, h.session(b"w2"))
    h.pool.tick(50)
    assert h.facts == [] and [i for i, _ in h.sent.of(Invoke)][-1] == b"w2"


def test_a_refused_invoke_of_another_workers_identity_changes_nothing() -> None:
    h = PoolHarness(heartbeat_ms=10, liveness=3)
    h.ready(b"w1", now=0)
    d = h.start("r1")
    h.pool.dispatch(d, 0)
    [(_, invoke)] = h.sent.of(Invoke)
    h.pool.undelivered(b"w2", [invoke])
    h.pool.tick(40)
    h.pool.tick(50)  # w1 silent: lost, and its step with it (it may have run)
    [(_, fact)] = h.facts
    assert isinstance(fact, StepLost) and fact.reason == "worker_lost"


def test_a_step_its_worker_comes_back_without_is_sent_again_when_the_worker_proves_who_it_is() -> None:
    # The Invoke went down a connection the worker gave up before reading it (its Ready does
    # not list it): the same worker (its token, or the one its first Ready presented when our
    # Welcome was lost) gets it again; it is not failed as worker_lost.
    h = PoolHarness(heartbeat_ms=10, liveness=3)
    h.ready(b"w1", now=0)
    d = h.start("r1")
    h.pool.dispatch(d, 0)
    h.ready(b"w1", now=5, session=h.session(b"w1"))
    assert h.facts == [] and [i for i, _ in h.sent.of(Invoke)] == [b"w1", b"w1"]
    assert h.pool.steps_in_flight() == 1
    h.ready(b"w2", now=6, session="w2-old")  # a daemon restart: its first Ready presents the old token
    e = h.start("r2")
    h.pool.dispatch(e, 6)
    assert [i for i, _ in h.sent.of(Invoke)][-1] == b"w2"
    h.ready(b"w2", now=7, session="w2-old")  # our Welcome was lost: the same old token again
    assert h.facts == [] and [i for i, _ in h.sent.of(Invoke)][-2:] == [b"w2", b"w2"]
    # Without the token it is not the same worker: the step may have run, it is lost.
    h.ready(b"w2", now=8)
    assert [(type(f).__name__, f.reason) for _, f in h.facts] == [("StepLost", "worker_lost")]


def test_a_ready_of_the_worker_from_before_it_had_our_welcome_read_late_changes_nothing() -> None:
    h = PoolHarness(heartbeat_ms=10, liveness=3)
    h.ready(b"w1", now=0, session="w1-old")  # after a daemon restart: the previous daemon's token
    d = h.start("r1")
    h.pool.dispatch(d, 0)
    h.pool.seen(b"w1", 1, h.session(b"w1"))  # it has our Welcome
    h.ready(b"w1", now=2, session="w1-old")  # a Ready its replaced connection left queued
    assert h.facts == [] and h.pool.steps_in_flight() == 1 and h.pool.refused["takeover"] == 0
    h.ready(b"w1", now=3, session="forged")  # a token it never had: a takeover, refused as before
    assert h.pool.refused["takeover"] == 1 and [type(f).__name__ for _, f in h.facts] == ["StepLost"]


def test_a_worker_keeps_the_ids_of_the_domains_its_ready_announced() -> None:
    # ``ontoflow workers`` lists them; a map without a string ``domain`` names nothing.
    h = PoolHarness()
    h.ready(b"w1", domains=[{"domain": "climate", "goals": []}, {"goals": []}, {"domain": 7}])
    h.ready(b"w2")
    assert {w.worker_id: w.domains for w in h.pool.registry} == {"w1": ["climate"], "w2": []}


def test_a_step_sent_again_as_its_worker_registers_goes_after_the_welcome() -> None:
    # After a daemon restart an attempt awaited from w1 is lost (interrupted) when w1 comes
    # back without it, and the engine sends an idempotent step again at once: to w1, in the
    # same registration. A worker drops an Invoke that arrives before its Welcome (it cannot
    # tell it from one sent to the connection it replaced), so that Invoke must follow the
    # Welcome; before it did not, and the step stayed in flight on w1 for ever (the kill -9
    # loop's run "still running" after the restart).
    runs, sent = RunTable(), Sent()
    run = Run(one_step(), "r1")
    runs.add(run)
    [d] = runs.advance(run, RunSubmitted(run_id="r1", inputs={}, now_ms=0))
    again = msgspec.structs.replace(d, attempt=d.attempt + 1)

    def deliver(run: Run, fact: Any) -> None:
        assert isinstance(fact, StepLost) and fact.reason == "interrupted"
        pool.dispatch(again, fact.now_ms)  # what the engine answers for an idempotent step

    pool = WorkerPool(runs=runs, send=sent, deliver=deliver, heartbeat_ms=10, liveness=3)
    pool.await_worker(d, "w1", 0)
    pool.ready(b"w1", Ready(protocol=PROTOCOL_VERSION, worker_id="w1", capabilities=[CAP], slots=1), 5)
    kinds = [type(m).__name__ for i, m in sent.items if i == b"w1"]
    assert kinds == ["Welcome", "Invoke"], kinds
    assert pool.steps_in_flight() == 1


def test_a_worker_offering_a_capability_with_other_metadata_than_a_live_one_is_warned_about() -> None:
    # Before: the second worker's metadata silently replaced the first's in the catalogue (a
    # run then "completed" without the output its workflow expected from the first version).
    from structlog.testing import capture_logs

    h = PoolHarness()
    h.ready(b"w1")
    other = msgspec.structs.replace(CAP, outputs=["x.other"])
    with capture_logs() as logs:
        h.pool.ready(b"w2", Ready(protocol=PROTOCOL_VERSION, worker_id="w2", capabilities=[other], slots=1), 0)
        h.ready(b"w3")  # the same metadata as w1's, while w2's differs: named too
        h.ready(b"w1")  # re-registering with what it offered: w2 and w3 live, w2 differs
    warned = [(e["worker_id"], e["capability"], e["fields"]) for e in logs if e["event"] == "capability_metadata_differs"]
    assert warned == [("w2", CAP.id, ["outputs"]), ("w3", CAP.id, ["outputs"]), ("w1", CAP.id, ["outputs"])]
    assert len(h.pool.registry) == 3  # warned, not refused: a rolling upgrade runs both versions


def test_an_artifact_the_os_cannot_open_is_sent_empty_and_the_slot_comes_back() -> None:
    # A name holding a NUL made opening it raise ValueError, not OSError: dispatch raised after
    # the attempt was recorded on its worker, so the slot was held for ever (review18).
    h = PoolHarness()
    h.ready(b"w1")
    d = msgspec.structs.replace(h.start("r1"), artifacts=["a\x00b"])
    h.pool.dispatch(d, 0)
    [(_, invoke)] = h.sent.of(Invoke)
    assert invoke.context.artifact == {"a\x00b": ""} and h.pool.steps_in_flight() == 1
    h.pool.outcome(b"w1", Outcome(session=h.session(b"w1"), run_id="r1", step_id=d.step_id, attempt=d.attempt, event="success"), 1)
    assert h.pool.steps_in_flight() == 0
