"""A plan's references are bounded in number, and a run walks only where they are.

Each reference is parsed when a plan is checked and resolved in the daemon's loop when its step
begins: a step of 100,000 references (a 1.4 MB plan) held a daemon's loop half a second, and
its plain values were walked there too, one by one, each time the step began.
"""

from __future__ import annotations

import pytest

from ontoflow.protocols import ManifestError, plan_from_data
from ontoflow.protocols.plan import MAX_PLAN_REFERENCES

from tests.actors.plans.helpers import Driver, cap, compile_data

CAPS = [cap("t.make", "n", outputs=("v",)), cap("t.eat", "x", "y", outputs=("size",))]


def _plan(x: object, y: object = 0) -> dict:
    return {"steps": [{"id": "a", "capability": "t.make"},
                      {"id": "b", "capability": "t.eat", "depends_on": ["a"], "params": {"x": x, "y": y}}]}


@pytest.mark.parametrize("x", [["${a.v}"] * (MAX_PLAN_REFERENCES + 1), "${a.v}" * (MAX_PLAN_REFERENCES + 1),
                               {"k": [{"m": "${a.v} and ${a.v}"}] * (MAX_PLAN_REFERENCES // 2 + 1)}],
                         ids=["list", "string", "nested"])
def test_a_plan_past_its_references_bound_is_refused_naming_the_step(x: object) -> None:
    with pytest.raises(ManifestError) as caught:
        plan_from_data(_plan(x))
    [problem] = caught.value.problems
    assert problem.path == "steps[1].params"
    assert problem.message == ("its references bring the plan's past 10,000; a plan's params hold at most 10,000 "
                               "references")


def test_references_are_counted_over_the_whole_plan_and_escapes_are_not_references() -> None:
    half = ["${a.v}"] * (MAX_PLAN_REFERENCES // 2)
    steps = [{"id": "a", "capability": "t.make"},
             {"id": "b", "capability": "t.eat", "depends_on": ["a"], "params": {"x": half}},
             {"id": "c", "capability": "t.eat", "depends_on": ["a"], "params": {"x": half, "y": "${a.v}"}}]
    with pytest.raises(ManifestError) as caught:
        plan_from_data({"steps": steps})
    assert [p.path for p in caught.value.problems] == ["steps[2].params"]
    assert len(plan_from_data(_plan(["${a.v}"] * MAX_PLAN_REFERENCES, "$${HOME} " * 50_000)).steps) == 2


def test_a_step_begins_without_walking_the_params_that_hold_no_reference() -> None:
    plain = list(range(100_000))
    d = Driver(compile_data(_plan({"rows": plain, "at": ["${a.v}", 1]}, {"more": plain}), CAPS))
    d.submit()
    d.finish("a", outputs={"v": 7})
    inputs = d.in_flight["b"].inputs
    assert inputs["x"] == {"rows": plain, "at": [7, 1]}
    # Kept as it is, not rebuilt value by value: no reference is in it.
    assert inputs["x"]["rows"] is plain and inputs["y"] is d.compiled.by_id["b"].params["y"]
    assert d.compiled.by_id["b"].params["x"]["at"] == ["${a.v}", 1]  # the plan's own params untouched
