"""How a step ends, decided once for both engines: the outputs rule, no-outcome ends, retries."""

from __future__ import annotations

import pytest

from ontoflow.actors.orchestrator.engine import (
    MAX_LOST_ATTEMPTS,
    CancelStep,
    Dispatch,
    RunCancelled,
    StepDeadlineExpired,
    StepFinished,
    StepLost,
    StepUnavailable,
    cancelled_end,
    describe,
    engine_end,
    outcome_end,
    redispatch,
    split_outputs,
)
from ontoflow.protocols import Outcome
from ontoflow.protocols.context import BlockContract, StepContext, SystemMetadata

from tests.actors.engine.helpers import Driver, block, cap, compile_nodes, node
from tests.actors.plans import helpers as plan


def test_only_declared_outputs_are_kept_and_none_declared_keeps_none() -> None:
    assert split_outputs({"a": 1, "b": 2}, {"a"}) == ({"a": 1}, ["b"])
    assert split_outputs({"a": 1, "b": 2}, ()) == ({}, ["a", "b"])
    assert split_outputs({}, {"a"}) == ({}, [])


def test_an_outcome_is_shortened_and_filtered() -> None:
    fact = StepFinished(Outcome(run_id="r", step_id="s1", attempt=2, event="x.a.success", outputs={"k": 1, "z": 2},
                                duration_ms=3.5, retries=1), 50)
    end = outcome_end(fact, capability="x.a", prefix="x.a.", declared={"k"}, started_ms=10)
    assert (end.event, end.attempt, end.outputs, end.dropped) == ("success", 2, {"k": 1}, ["z"])
    assert (end.duration_ms, end.retries, end.started_ms, end.ended_ms) == (3.5, 1, 10, 50)


def test_ends_without_an_outcome() -> None:
    cmds: list = []
    timed = engine_end(StepDeadlineExpired("s1", 1, 40), run_id="r", capability="x.a", idempotent=True, started_ms=10,
                       cmds=cmds)
    assert timed is not None and (timed.event, timed.reason, timed.duration_ms) == ("timeout", "deadline", 30.0)
    assert cmds == [CancelStep("r", "s1", 1)]
    none = engine_end(StepUnavailable("s1", 1, 40), run_id="r", capability="x.a", idempotent=True, started_ms=10,
                      cmds=cmds)
    assert none is not None and (none.event, none.reason) == ("unavailable", "no_worker")
    lost = engine_end(StepLost("s1", 1, "worker_lost", 40), run_id="r", capability="x.a", idempotent=False,
                      started_ms=10, cmds=cmds)
    assert lost is not None and (lost.event, lost.reason) == ("failure", "worker_lost") and "not idempotent" in lost.error
    assert engine_end(StepLost("s1", 1, "worker_lost", 40), run_id="r", capability="x.a", idempotent=True,
                      started_ms=10, cmds=cmds) is None
    assert len(cmds) == 1  # only the timeout cancels


def test_a_lost_idempotent_step_goes_again_with_a_fresh_budget() -> None:
    context = StepContext([], BlockContract("n", "b", "x.a", ""), {}, {}, SystemMetadata("r", "n", "b", "s1", "", ""))
    first = Dispatch("r", "s1", 1, "x.a", {}, context, 100, True, [])
    again, note = redispatch(first, StepLost("s1", 1, "worker_lost", 500), capability="x.a", budget_ms=60)
    assert (again.attempt, again.deadline_at_ms) == (2, 560) and "attempt 2" in note


def test_a_cancelled_step_and_a_fact_described_without_values() -> None:
    end = cancelled_end(RunCancelled("by request", 30), step_id="s1", capability="x.a", attempt=1, started_ms=10)
    assert (end.event, end.reason, end.error, end.duration_ms) == ("cancelled", "run_cancelled", "by request", 20.0)
    assert describe(StepLost("s1", 2, "worker_lost", 0)) == "StepLost s1/2"
    assert describe(RunCancelled("secret reason", 0)) == "RunCancelled"


def test_both_engines_drop_every_output_of_a_capability_that_declares_none() -> None:
    workflow = Driver(compile_nodes({"main": node("a", {"a": block("x.a")})}, [cap("x.a")]))
    workflow.submit()
    workflow.finish(outputs={"k.x": 1})
    assert "k.x" not in workflow.state.context and workflow.state.trace[0].dropped_outputs == ["k.x"]

    run = plan.Driver(plan.compile_data({"steps": [{"id": "a", "capability": "x.a"}]}, [plan.cap("x.a")]))
    run.submit()
    run.finish("a", outputs={"k.x": 1})
    assert "k.x" not in run.state.context and run.state.trace[0].dropped_outputs == ["k.x"]


def _both(cap_fields: dict) -> tuple[Driver, plan.Driver]:
    """A one-step workflow and a one-step plan of the same capability, both submitted."""
    workflow = Driver(compile_nodes({"main": node("a", {"a": block("x.a")})}, [cap("x.a", **cap_fields)]))
    workflow.submit()
    run = plan.Driver(plan.compile_data({"steps": [{"id": "a", "capability": "x.a"}]}, [plan.cap("x.a", **cap_fields)]))
    run.submit()
    return workflow, run


@pytest.mark.parametrize(
    "make",
    [
        lambda step, now: StepDeadlineExpired(step, 1, now),
        lambda step, now: StepUnavailable(step, 1, now),
        lambda step, now: StepLost(step, 1, "worker_lost", now),
    ],
    ids=["timeout", "unavailable", "lost_not_idempotent"],
)
def test_both_engines_end_a_step_without_an_outcome_alike(make) -> None:
    workflow, run = _both({"idempotent": False})
    w_cmds = workflow.feed(make("s1", 1_050))
    p_cmds = run.feed(make("a", 1_050))
    w, p = workflow.state.trace[0], run.state.trace[0]
    assert (w.event, w.reason, w.attempt, w.duration_ms, w.capability) == (p.event, p.reason, p.attempt,
                                                                           p.duration_ms, p.capability)
    assert w.error is not None and w.error.replace("step s1 ", "step a ") == p.error
    assert [type(c) for c in w_cmds] == [type(c) for c in p_cmds]  # a CancelStep for a timeout, then RunEnded
    assert workflow.state.status == run.state.status == "failed"


def test_both_engines_gate_facts_alike() -> None:
    workflow, run = _both({})
    for driver in (workflow, run):
        with pytest.raises(TypeError, match="advance\\(\\) takes a Fact, got str"):
            driver.feed("not a fact")  # type: ignore[arg-type]
    workflow.feed(RunCancelled("by request", 1_100))
    run.feed(RunCancelled("by request", 1_100))
    for step in ("s1", "a"):
        late = StepLost(step, 1, "worker_lost", 1_200)
        (workflow if step == "s1" else run).feed(late)
    assert workflow.state.notes[-1] == "StepLost s1/1 ignored: run already cancelled"
    assert run.state.notes[-1] == "StepLost a/1 ignored: run already cancelled"
    assert workflow.state.trace[0].reason == run.state.trace[0].reason == "run_cancelled"


def test_both_engines_give_up_on_a_step_lost_on_its_last_attempt_alike() -> None:
    workflow, run = _both({"idempotent": True})
    for attempt in range(1, MAX_LOST_ATTEMPTS):
        ((again_w,), (again_p,)) = (workflow.feed(StepLost("s1", attempt, "worker_lost", 1_050)),
                                    run.feed(StepLost("a", attempt, "worker_lost", 1_050)))
        assert isinstance(again_w, Dispatch) and isinstance(again_p, Dispatch)
        assert again_w.attempt == again_p.attempt == attempt + 1
    workflow.feed(StepLost("s1", MAX_LOST_ATTEMPTS, "worker_lost", 1_100))
    run.feed(StepLost("a", MAX_LOST_ATTEMPTS, "worker_lost", 1_100))
    w, p = workflow.state.trace[0], run.state.trace[0]
    assert (w.event, w.reason, w.attempt) == (p.event, p.reason, p.attempt) == ("failure", "worker_lost", MAX_LOST_ATTEMPTS)
    assert w.error is not None and w.error.replace("step s1 ", "step a ") == p.error
    assert workflow.state.status == run.state.status == "failed"
