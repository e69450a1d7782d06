"""A concurrency bound built in code is checked as one decoded is: ``True`` (a bool, which
Python counts as 1) is refused, and so is a plan's bound under 1. ``check_plan`` took
``max_concurrency=True`` and the journal could not decode the plan it pinned. A decomposition
rule's bound under 1 is taken (one at a time, as the engine reads it): a worker announcing one
registered before, and must still."""

from __future__ import annotations

import pytest

from ontoflow.protocols import ArrayParam, CapabilityMetadata, Decomposition
from ontoflow.protocols.capability import check_metadata
from ontoflow.protocols.plan import ExecutionPlan, ExecutionStep, check_plan


@pytest.mark.parametrize("bound", [True, False, 0, -3])
def test_a_plans_bound_that_is_a_bool_or_under_one_is_refused(bound: int) -> None:
    plan = ExecutionPlan(steps=[ExecutionStep(id="a", capability="t.a")], max_concurrency=bound)
    assert [p.path for p in check_plan(plan)] == ["max_concurrency"]


def test_a_decomposition_rules_bound_that_is_a_bool_is_refused_one_under_one_taken() -> None:
    def paths(bound: int) -> list[str]:
        rule = ArrayParam(param_name="t.as", single_param_name="t.a", max_concurrency=bound)
        return [p.path for p in check_metadata(CapabilityMetadata(id="t.a", decomposition=Decomposition(array_params=[rule])))]
    assert paths(True) == ["capabilities[t.a].decomposition.array_params[0].max_concurrency"]
    assert paths(0) == paths(-3) == []


def test_sound_bounds_pass() -> None:
    rule = ArrayParam(param_name="t.as", single_param_name="t.a", max_concurrency=2)
    assert check_metadata(CapabilityMetadata(id="t.a", decomposition=Decomposition(array_params=[rule]))) == []
    assert check_plan(ExecutionPlan(steps=[ExecutionStep(id="a", capability="t.a")], max_concurrency=2)) == []
