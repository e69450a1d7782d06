"""A concurrency bound built in code is checked as one decoded is: ``True`` (a bool, which
Python counts as 1) and numbers under 1 are refused. ``check_plan`` took ``max_concurrency=True``
and the journal could not decode the plan it pinned; ``check_metadata`` took a decomposition
rule's ``max_concurrency`` of 0 or -3, which the planner then wrote into a plan the plan check
refused."""

from __future__ import annotations

import pytest

from ontoflow.protocols import ArrayParam, CapabilityMetadata, Decomposition
from ontoflow.protocols.capability import check_metadata
from ontoflow.protocols.plan import ExecutionPlan, ExecutionStep, check_plan


@pytest.mark.parametrize("bound", [True, False, 0, -3])
def test_a_plans_bound_that_is_a_bool_or_under_one_is_refused(bound: int) -> None:
    plan = ExecutionPlan(steps=[ExecutionStep(id="a", capability="t.a")], max_concurrency=bound)
    assert [p.path for p in check_plan(plan)] == ["max_concurrency"]


@pytest.mark.parametrize("bound", [True, 0, -3])
def test_a_decomposition_rules_bound_that_is_a_bool_or_under_one_is_refused(bound: int) -> None:
    rule = ArrayParam(param_name="t.as", single_param_name="t.a", max_concurrency=bound)
    meta = CapabilityMetadata(id="t.a", decomposition=Decomposition(array_params=[rule]))
    assert [p.path for p in check_metadata(meta)] == ["capabilities[t.a].decomposition.array_params[0].max_concurrency"]


def test_sound_bounds_pass() -> None:
    rule = ArrayParam(param_name="t.as", single_param_name="t.a", max_concurrency=2)
    assert check_metadata(CapabilityMetadata(id="t.a", decomposition=Decomposition(array_params=[rule]))) == []
    assert check_plan(ExecutionPlan(steps=[ExecutionStep(id="a", capability="t.a")], max_concurrency=2)) == []
