"""Recovered attempts awaiting their old worker, and the capability catalogue, in the worker pool."""

from __future__ import annotations

from typing import Any

from ontoflow.actors.orchestrator import Run, RunTable, WorkerPool
from ontoflow.actors.orchestrator._worker_pool import RECONNECT_ALLOWANCE_MS
from ontoflow.actors.orchestrator.engine import Dispatch, RunSubmitted, StepFinished, StepLost
from ontoflow.protocols import CapabilityMetadata, Outcome
from ontoflow.protocols.messages import PROTOCOL_VERSION, Cancel, Ready, Welcome

from tests.actors.orchestrator.parts import CAP, Sent, one_step

HEARTBEAT_MS, LIVENESS = 10, 3
WINDOW = HEARTBEAT_MS * LIVENESS + RECONNECT_ALLOWANCE_MS


class _Harness:
    def __init__(self) -> None:
        self.runs = RunTable()
        self.sent = Sent()
        self.facts: list[tuple[str, Any]] = []
        self.recorded: list[tuple[list[CapabilityMetadata], int]] = []
        self.pool = WorkerPool(runs=self.runs, send=self.sent, deliver=self.deliver, heartbeat_ms=HEARTBEAT_MS,
                               liveness=LIVENESS, record_capabilities=lambda m, now: self.recorded.append((m, now)))

    def deliver(self, run: Run, fact: Any) -> None:
        self.facts.append((run.run_id, fact))

    def start(self, run_id: str) -> Dispatch:
        run = Run(one_step(), run_id)
        self.runs.add(run)
        [d] = self.runs.advance(run, RunSubmitted(run_id=run_id, inputs={}, now_ms=0))
        return d

    def ready(self, worker_id: str, now: int, holding: list[tuple[str, str, int]] = (), session: str = "") -> None:
        self.pool.ready(worker_id.encode(), Ready(protocol=PROTOCOL_VERSION, worker_id=worker_id, capabilities=[CAP],
                                                  slots=2, holding=[list(k) for k in holding], session=session), now)


def _key(d: Dispatch) -> tuple[str, str, int]:
    return (d.run_id, d.step_id, d.attempt)


def test_a_recovered_attempt_goes_back_to_its_worker_holding_it_and_its_resent_outcome_is_applied() -> None:
    h = _Harness()
    d = h.start("r1")
    h.pool.await_worker(d, "w1", 0)
    assert h.pool.statistics()["steps_awaiting_worker"] == 1
    h.ready("w1", now=20, holding=[_key(d)])
    assert not h.sent.of(Cancel)  # awaited, so not stale
    assert h.pool.steps_in_flight() == 1 and h.pool.statistics()["steps_awaiting_worker"] == 0
    token = next(m.session for i, m in reversed(h.sent.of(Welcome)) if i == b"w1")  # the session's answers carry it
    h.pool.outcome(b"w1", Outcome(session=token, run_id="r1", step_id=d.step_id, attempt=d.attempt, event="success"), 21)
    [(_, fact)] = h.facts
    assert isinstance(fact, StepFinished)
    h.pool.tick(WINDOW + 1)  # nothing left to expire
    assert len(h.facts) == 1


def test_a_worker_whose_welcome_was_lost_registers_again_with_the_same_old_token_and_keeps_its_attempt() -> None:
    # After a restart, the worker's first Ready (presenting the old daemon's token) waited in
    # a connection it then replaced: our Welcome is lost, and it sends its Ready again.
    h = _Harness()
    d = h.start("r1")
    h.pool.await_worker(d, "w1", 0)
    h.ready("w1", now=20, holding=[_key(d)], session="old-daemon-token")
    first = h.sent.of(Welcome)[-1][1].session
    h.ready("w1", now=40, holding=[_key(d)], session="old-daemon-token")
    assert h.sent.of(Welcome)[-1][1].session == first  # the same session, welcomed again
    assert h.facts == [] and h.pool.steps_in_flight() == 1
    h.pool.outcome(b"w1", Outcome(session=first, run_id="r1", step_id=d.step_id, attempt=d.attempt, event="success"), 41)
    [(_, fact)] = h.facts
    assert isinstance(fact, StepFinished)


def test_a_confirmed_session_ignores_a_stale_ready_and_another_token_takes_nothing_over() -> None:
    for confirmed, token in ((True, "old-daemon-token"), (False, "another-token"), (False, "")):
        h = _Harness()
        d = h.start("r1")
        h.pool.await_worker(d, "w1", 0)
        h.ready("w1", now=20, holding=[_key(d)], session="old-daemon-token")
        if confirmed:  # a heartbeat in the new session: the Welcome arrived
            assert h.pool.seen(b"w1", 25, h.sent.of(Welcome)[-1][1].session) is not None
        h.ready("w1", now=40, holding=[_key(d)], session=token)
        if confirmed:
            # The token its first Ready presented, once it has our Welcome: a stale Ready its
            # replaced connection left queued. It is ignored: no takeover, and nothing lost.
            assert h.facts == [] and h.pool.steps_in_flight() == 1 and h.pool.refused["takeover"] == 0
            continue
        [(_, fact)] = h.facts
        assert isinstance(fact, StepLost) and fact.reason == "worker_lost", (confirmed, token)


def test_a_worker_that_comes_back_without_the_attempt_loses_it_as_interrupted() -> None:
    h = _Harness()
    d = h.start("r1")
    h.pool.await_worker(d, "w1", 0)
    h.ready("w1", now=20)
    [(_, fact)] = h.facts
    assert isinstance(fact, StepLost) and fact.reason == "interrupted" and fact.now_ms == 20


def test_another_worker_registering_does_not_take_or_end_the_awaited_attempt() -> None:
    h = _Harness()
    d = h.start("r1")
    h.pool.await_worker(d, "w1", 0)
    h.ready("w2", now=5, holding=[_key(d)])  # a worker that never ran it cannot claim it
    assert h.facts == [] and h.pool.steps_in_flight() == 0
    assert [m for _, m in h.sent.of(Cancel)] == [Cancel(run_id="r1", step_id=d.step_id, attempt=d.attempt)]


def test_an_attempt_whose_worker_never_comes_back_is_interrupted_at_the_window_and_not_before() -> None:
    h = _Harness()
    d = h.start("r1")
    h.pool.await_worker(d, "w1", 100)
    h.pool.tick(100 + WINDOW - 1)
    assert h.facts == []
    h.pool.tick(100 + WINDOW)  # past the window: given up at the next tick (a second look)
    assert h.facts == []
    h.pool.tick(100 + WINDOW + 10)
    [(_, fact)] = h.facts
    assert isinstance(fact, StepLost) and fact.reason == "interrupted" and fact.now_ms == 100 + WINDOW + 10
    h.ready("w1", now=100 + WINDOW + 11, holding=[_key(d)])  # too late: stopped, not applied
    assert len(h.facts) == 1 and h.sent.of(Cancel)


def test_a_worker_whose_ready_is_read_after_the_first_tick_past_the_window_still_gets_its_attempt() -> None:
    # After a stall of the daemon's loop, the first tick can come before the queued Ready.
    h = _Harness()
    d = h.start("r1")
    h.pool.await_worker(d, "w1", 100)
    h.pool.tick(100 + WINDOW + 500)
    h.ready("w1", now=100 + WINDOW + 500, holding=[_key(d)])
    h.pool.tick(100 + WINDOW + 510)
    assert h.facts == [] and h.pool.steps_in_flight() == 1


def test_a_cancelled_attempt_no_longer_awaits() -> None:
    h = _Harness()
    d = h.start("r1")
    h.pool.await_worker(d, "w1", 0)
    h.pool.cancel_step(*_key(d))
    h.pool.tick(WINDOW + 1)
    assert h.facts == []


def test_the_catalogue_keeps_what_workers_offered_after_they_go_and_records_each_registration() -> None:
    h = _Harness()
    other = CapabilityMetadata(id="test.capability.other", timeout_ms=500)
    h.pool.know([other], 1)
    assert h.recorded == [([other], 1)]
    h.pool.know([other], 2)  # known already: nothing new to record
    assert len(h.recorded) == 1
    h.ready("w1", now=3)
    assert h.recorded[-1] == ([CAP], 3)
    h.pool.lose(b"w1", 4, "worker_lost")
    assert h.pool.registry.catalog() == {}
    assert h.pool.registry.known() == {CAP.id: CAP, other.id: other}
