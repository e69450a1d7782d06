"""Facts the engine decides on itself: stale outcomes, deadlines, lost workers, cancellation."""

from __future__ import annotations

from ontoflow.protocols import Outcome

from ontoflow.actors.orchestrator.engine import (
    CancelStep,
    MAX_LOST_ATTEMPTS,
    Dispatch,
    RunCancelled,
    RunEnded,
    StepDeadlineExpired,
    StepFinished,
    StepLost,
    StepUnavailable,
)
from tests.actors.engine.helpers import Driver, block, cap, compile_nodes, node

CAPS = [cap("x.a", timeout_ms=1000, idempotent=True), cap("x.b", timeout_ms=None), cap("x.h")]


def _run(worker: str = "x.a", **fields) -> Driver:
    nodes = {"main": node("a", {
        "a": block(worker, ("success", "JUMP:h"), ("SIGNAL:FAIL_DEFAULT", "JUMP:h"), **fields),
        "h": block("x.h"),
    })}
    run = Driver(compile_nodes(nodes, CAPS))
    run.submit()
    return run


def test_a_stale_outcome_is_ignored_and_noted() -> None:
    run = _run()
    for step_id, attempt, run_id in (("s9", 1, "r1"), ("s1", 2, "r1"), ("s1", 1, "other")):
        outcome = Outcome(run_id=run_id, step_id=step_id, attempt=attempt, event="success")
        assert run.feed(StepFinished(outcome, run.now)) == []
    assert run.state.notes[0] == "stale outcome s9/1 ignored"
    assert run.state.notes[1] == "stale outcome s1/2 ignored"
    assert run.state.pending is not None and run.state.pending.step_id == "s1"
    assert run.state.trace == []


def test_facts_after_the_end_change_nothing() -> None:
    run = _run()
    run.feed(RunCancelled("operator", run.now))
    assert run.feed(StepLost("s1", 1, "worker_lost", run.now)) == []
    assert run.feed(RunCancelled("again", run.now)) == []
    assert run.state.notes == ["StepLost s1/1 ignored: run already cancelled", "RunCancelled ignored: run already cancelled"]


def test_a_deadline_cancels_the_attempt_and_routes_timeout() -> None:
    run = _run()
    dispatched_at = run.now - 10
    assert run.pending.deadline_at_ms == dispatched_at + 4 * 1000 + round((100 + 200 + 400) * 1.25) + 1000
    cmds = run.feed(StepDeadlineExpired("s1", 1, run.now))
    assert cmds[0] == CancelStep("r1", "s1", 1)
    assert isinstance(cmds[1], Dispatch) and cmds[1].capability == "x.h"
    entry = run.state.trace[0]
    assert (entry.event, entry.reason, entry.action) == ("timeout", "deadline", "JUMP:h")
    assert run.state.context["ontoflow.last_failure"]["event"] == "timeout"


def test_a_block_timeout_overrides_and_no_timeout_means_no_deadline() -> None:
    assert _run(timeout_ms=50).pending.deadline_at_ms == 1000 + 50
    assert _run("x.b").pending.deadline_at_ms is None


def test_unavailable_routes_the_unavailable_event() -> None:
    run = _run()
    run.feed(StepUnavailable("s1", 1, run.now))
    assert (run.state.trace[0].event, run.state.block) == ("unavailable", "h")


def test_a_lost_idempotent_step_is_dispatched_again_as_attempt_2() -> None:
    run = _run()
    first = run.pending
    (again,) = run.feed(StepLost("s1", 1, "worker_lost", run.now))
    assert isinstance(again, Dispatch)
    assert (again.step_id, again.attempt) == ("s1", 2)
    assert again.deadline_at_ms == first.deadline_at_ms + 10  # a fresh budget from now
    assert (again.inputs, again.context) == (first.inputs, first.context)
    assert "dispatched again as attempt 2" in run.state.notes[-1]
    assert run.feed(StepFinished(Outcome(run_id="r1", step_id="s1", attempt=1, event="success"), run.now)) == []
    run.finish()
    assert (run.state.trace[0].attempt, run.state.block) == (2, "h")


def test_a_lost_step_that_is_not_idempotent_fails_with_the_reason() -> None:
    run = _run("x.b")
    cmds = run.feed(StepLost("s1", 1, "worker_lost", run.now))
    assert [c.capability for c in cmds if isinstance(c, Dispatch)] == ["x.h"]
    entry = run.state.trace[0]
    assert (entry.event, entry.reason) == ("failure", "worker_lost")
    assert run.state.context["ontoflow.last_failure"]["reason"] == "worker_lost"


def test_cancel_stops_the_pending_step_and_ends_the_run_once() -> None:
    run = _run()
    cmds = run.feed(RunCancelled("operator", run.now))
    assert cmds == [CancelStep("r1", "s1", 1), RunEnded("r1", "cancelled", "run cancelled: operator")]
    assert (run.state.status, run.state.pending, run.state.ended_ms) == ("cancelled", None, run.now - 10)
    assert run.state.trace[0].event == "cancelled"


def test_a_step_lost_on_its_last_attempt_fails_even_when_idempotent() -> None:
    # A poison pill: the step kills every worker it lands on. It went out again forever.
    run = _run()
    for attempt in range(1, MAX_LOST_ATTEMPTS):
        (again,) = run.feed(StepLost("s1", attempt, "worker_lost", run.now))
        assert isinstance(again, Dispatch) and again.attempt == attempt + 1
    cmds = run.feed(StepLost("s1", MAX_LOST_ATTEMPTS, "worker_lost", run.now))
    assert [c.capability for c in cmds if isinstance(c, Dispatch)] == ["x.h"]  # routed by FAIL_DEFAULT
    entry = run.state.trace[0]
    assert (entry.event, entry.reason, entry.attempt, entry.action) == ("failure", "worker_lost", 3, "JUMP:h")
    assert entry.error == "step s1 of 'x.a' was lost (worker_lost) on attempt 3, its last (a lost step is dispatched at most 3 times)"
    assert run.state.context["ontoflow.last_failure"]["reason"] == "worker_lost"


def test_an_event_the_capability_does_not_declare_ends_the_step_failure() -> None:
    # A worker speaking the wire protocol itself may answer any text; the capability base turns
    # a Python capability's undeclared event into `failure`, and so does the engine for any worker.
    run = _run()
    outcome = Outcome(run_id="r1", step_id="s1", attempt=1, event="sucess-token=hunter2", outputs={"k": 1})
    (sent,) = run.feed(StepFinished(outcome, run.now))
    assert isinstance(sent, Dispatch) and sent.capability == "x.h"  # routed by FAIL_DEFAULT as a failure
    entry = run.state.trace[0]
    assert (entry.event, entry.reason, entry.action, entry.dropped_outputs) == (
        "failure", "undeclared_event", "JUMP:h", ["k"])
    assert entry.error == "the worker answered an event 'x.a' does not declare (20 characters)"
    assert "hunter2" not in repr(run.state)


def test_an_undeclared_event_never_meets_a_prerequisite_nor_completes_a_run() -> None:
    caps = [cap("x.auth"), cap("x.use", requires=["x.auth"])]
    run = Driver(compile_nodes({"main": node("a", {"a": block("x.use")})}, caps))
    run.submit()
    assert run.pending.capability == "x.auth"
    (ended,) = run.finish("whatever")  # x.use then ends prerequisite_failed at once: no transitions
    assert run.state.succeeded == []
    assert isinstance(ended, RunEnded) and ended.status == "failed"
    assert [(t.capability, t.event) for t in run.state.trace] == [("x.auth", "failure"), ("x.use", "prerequisite_failed")]
    bare = Driver(compile_nodes({"main": node("a", {"a": block("x.h")})}, CAPS))
    bare.submit()
    assert bare.finish("whatever") == [RunEnded("r1", "failed", "block 'a' of node 'main' has no transitions and "
                                                            "its step s1 ended with 'failure'")]
