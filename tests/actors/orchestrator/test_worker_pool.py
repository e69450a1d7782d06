"""The worker pool on its own: registration, credits, outcomes, liveness, the pending queue."""

from __future__ import annotations

from typing import Any

from ontoflow.actors.orchestrator import Run, RunTable, WorkerPool
from ontoflow.actors.orchestrator.engine import (
    Dispatch,
    RunSubmitted,
    StepDeadlineExpired,
    StepFinished,
    StepLost,
    StepUnavailable,
)
from ontoflow.protocols import Outcome
from ontoflow.protocols.messages import PROTOCOL_VERSION, Cancel, Disconnect, Heartbeat, Invoke, Ready, Welcome

from tests.actors.orchestrator.parts import CAP, Sent, one_step


class _Harness:
    def __init__(self, **options: Any) -> None:
        self.runs = RunTable()
        self.sent = Sent()
        self.facts: list[tuple[str, Any]] = []
        self.pool = WorkerPool(runs=self.runs, send=self.sent, deliver=self.deliver, **options)

    def deliver(self, run: Run, fact: Any) -> None:
        self.facts.append((run.run_id, fact))

    def start(self, run_id: str, now: int = 0) -> Dispatch:
        run = Run(one_step(), run_id)
        self.runs.add(run)
        [d] = self.runs.advance(run, RunSubmitted(run_id=run_id, inputs={}, now_ms=now))
        return d

    def session(self, identity: bytes) -> str:
        """The session token the pool welcomed ``identity`` with (its Outcomes carry it)."""
        return next((m.session for i, m in reversed(self.sent.of(Welcome)) if i == identity), "")

    def ready(self, identity: bytes, now: int = 0, **fields: Any) -> None:
        fields.setdefault("slots", 1)
        self.pool.ready(identity, Ready(protocol=PROTOCOL_VERSION, worker_id=identity.decode(), capabilities=[CAP],
                                        **fields), now)


def test_a_step_waits_for_a_worker_then_goes_to_it_and_its_outcome_becomes_a_fact() -> None:
    h = _Harness()
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
    h = _Harness()
    h.ready(b"w1")
    first, second = h.start("r1"), h.start("r2")
    h.pool.dispatch(first, 0)
    h.pool.dispatch(second, 0)
    assert len(h.sent.of(Invoke)) == 1  # one slot
    h.pool.outcome(b"w1", Outcome(session=h.session(b"w1"), run_id="r1", step_id=first.step_id, attempt=first.attempt, event="success"), 1)
    assert [m.run_id for _, m in h.sent.of(Invoke)] == ["r1", "r2"]


def test_an_outcome_from_another_worker_is_ignored() -> None:
    h = _Harness()
    h.ready(b"w1")
    d = h.start("r1")
    h.pool.dispatch(d, 0)
    h.pool.outcome(b"w2", Outcome(session=h.session(b"w2"), run_id="r1", step_id=d.step_id, attempt=d.attempt, event="success"), 1)
    assert h.facts == [] and h.pool.steps_in_flight() == 1


def test_a_silent_worker_is_lost_with_its_steps_and_heartbeats_go_out() -> None:
    h = _Harness(heartbeat_ms=10, liveness=3)
    h.ready(b"w1", now=0)
    d = h.start("r1")
    h.pool.dispatch(d, 0)
    h.pool.tick(10)
    assert h.sent.of(Heartbeat)
    h.pool.tick(31)
    [(_, fact)] = h.facts
    assert isinstance(fact, StepLost) and fact.reason == "worker_lost" and len(h.pool.registry) == 0


def test_steps_wait_at_most_schedule_to_start_then_are_unavailable() -> None:
    h = _Harness(schedule_to_start_ms=100)
    h.pool.dispatch(h.start("r1"), 0)
    h.pool.tick(100)
    assert h.facts == []
    h.pool.tick(101)
    [(_, fact)] = h.facts
    assert isinstance(fact, StepUnavailable)


def test_a_step_past_its_deadline_expires_and_cancel_reaches_its_worker() -> None:
    h = _Harness()
    h.ready(b"w1")
    d = h.start("r1")
    h.pool.dispatch(d, 0)
    assert d.deadline_at_ms is not None
    h.pool.seen(b"w1", d.deadline_at_ms)  # alive: only the step is late
    h.pool.tick(d.deadline_at_ms)
    [(_, fact)] = h.facts
    assert isinstance(fact, StepDeadlineExpired)
    h.pool.cancel_step("r1", d.step_id, d.attempt)
    assert [m.run_id for _, m in h.sent.of(Cancel)] == ["r1"]


def test_a_worker_of_another_protocol_is_refused() -> None:
    h = _Harness()
    h.pool.ready(b"old", Ready(protocol=PROTOCOL_VERSION + 1, worker_id="old"), 0)
    assert h.sent.of(Disconnect) and len(h.pool.registry) == 0


def test_an_oversized_output_becomes_a_failure_before_it_is_a_fact() -> None:
    h = _Harness(max_value_bytes=10)
    h.ready(b"w1")
    d = h.start("r1")
    h.pool.dispatch(d, 0)
    h.pool.outcome(b"w1", Outcome(session=h.session(b"w1"), run_id="r1", step_id=d.step_id, attempt=d.attempt, event="success",
                                  outputs={"k": "x" * 100}), 1)
    [(_, fact)] = h.facts
    assert fact.outcome.event == "failure" and fact.outcome.reason == "output_too_large" and not fact.outcome.outputs


def test_draining_holds_new_steps() -> None:
    h = _Harness()
    h.ready(b"w1")
    h.pool.draining = True
    h.pool.dispatch(h.start("r1"), 0)
    assert not h.sent.of(Invoke) and h.pool.statistics()["steps_waiting"] == 1


def test_an_outcome_without_the_session_token_is_ignored_and_a_ready_without_it_takes_nothing_over() -> None:
    h = _Harness()
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
