"""In a sequential plan an optional step's failure does not stop the steps after it."""

from __future__ import annotations

from ontoflow.actors.orchestrator.engine import RunEnded
from ontoflow.actors.orchestrator.plans import STEPS_KEY

from tests.actors.plans.helpers import Driver, cap, compile_data, dispatched

CAPS = [cap("t.work", "x", outputs=("v",))]


def _plan(*steps: dict) -> Driver:
    return Driver(compile_data({"execution_mode": "sequential", "steps": list(steps)}, CAPS))


def test_an_optional_failure_lets_the_next_step_run_and_the_plan_complete() -> None:
    d = _plan({"id": "price", "capability": "t.work"}, {"id": "notify", "capability": "t.work", "required": False},
              {"id": "log", "capability": "t.work"})
    d.submit()
    d.finish("price", outputs={"v": 1})
    # Before: "log" was skipped for the optional "notify", and the plan failed for it.
    assert dispatched(d.finish("notify", "failure", error="telegram down")) == ["log"]
    assert d.finish("log", outputs={"v": 2})[-1] == RunEnded("r1", "completed", None)
    assert d.state.context[STEPS_KEY] == {"price": "succeeded", "notify": "failed", "log": "succeeded"}
    assert d.state.context["v"] == 2


def test_a_required_failure_still_skips_every_step_after_it_optional_or_not() -> None:
    d = _plan({"id": "a", "capability": "t.work"}, {"id": "b", "capability": "t.work", "required": False},
              {"id": "c", "capability": "t.work"})
    d.submit()
    cmds = d.finish("a", "failure")
    assert dispatched(cmds) == [] and cmds[-1].status == "failed" and "'a'" in cmds[-1].error
    assert d.state.context[STEPS_KEY] == {"a": "failed", "b": "skipped", "c": "skipped"}
    assert "dependency 'a'" in next(t for t in d.state.trace if t.step_id == "c").error


def test_a_reference_to_a_failed_optional_step_skips_rather_than_fails_on_the_reference() -> None:
    d = _plan({"id": "a", "capability": "t.work", "required": False}, {"id": "b", "capability": "t.work"},
              {"id": "c", "capability": "t.work", "required": False, "params": {"x": "${a.v}"}})
    d.submit()
    d.finish("a", "failure")
    cmds = d.finish("b", outputs={"v": 1})
    c = next(t for t in d.state.trace if t.step_id == "c")
    assert (c.event, c.reason) == ("skipped", "dependency_failed") and "dependency 'a'" in c.error
    assert cmds[-1] == RunEnded("r1", "completed", None)
