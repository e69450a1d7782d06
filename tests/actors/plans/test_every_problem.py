"""A plan's validation reports every problem at once: no kind of problem hides another."""

from __future__ import annotations

import pytest

from ontoflow.actors.orchestrator.plans import compile_plan
from ontoflow.protocols import CapabilityMetadata, ManifestError
from ontoflow.protocols.plan import ExecutionPlan, ExecutionStep, plan_from_data


def _problems(data: dict) -> list[str]:
    with pytest.raises(ManifestError) as caught:
        plan_from_data(data)
    return [str(p) for p in caught.value.problems]


def _step(sid: str, **fields) -> dict:
    return {"id": sid, "capability": "t.work", **fields}


def test_every_cycle_is_named_not_the_first_only() -> None:
    found = _problems({"execution_mode": "dag", "steps": [
        _step("a", depends_on=["b"]), _step("b", depends_on=["a"]), _step("c", depends_on=["d"]), _step("d", depends_on=["c"])]})
    assert found == ["steps[0].depends_on: steps form a cycle: a -> b -> a",
                     "steps[2].depends_on: steps form a cycle: c -> d -> c"]


def test_a_dangling_dependency_does_not_hide_a_bad_reference_elsewhere() -> None:
    found = _problems({"execution_mode": "dag", "steps": [
        _step("a", depends_on=["zz"]), _step("b", params={"p": "${q.x}"}), _step("c", params={"p": "${b.x}"})]})
    assert found == ["steps[0].depends_on[0]: step 'zz' does not exist",
                     "steps[1].params.p: reference ${q.x} names step 'q', which does not exist",
                     "steps[2].params.p: reference ${b.x} names step 'b', which is not an ancestor of step 'c' (add it to depends_on)"]


def test_a_cycle_does_not_hide_references_where_ancestry_is_known() -> None:
    found = _problems({"execution_mode": "dag", "steps": [
        _step("a", depends_on=["b"]), _step("b", depends_on=["a"]), _step("c", params={"p": "${q.x}"}),
        _step("d", depends_on=["a"], params={"p": "${c.x}"}), _step("e", params={"p": "${c.x}"})]})
    assert found == ["steps[0].depends_on: steps form a cycle: a -> b -> a",
                     "steps[2].params.p: reference ${q.x} names step 'q', which does not exist",
                     # d's ancestry runs through the cycle: not judged; e's is known
                     "steps[4].params.p: reference ${c.x} names step 'c', which is not an ancestor of step 'e' (add it to depends_on)"]


def test_a_step_that_does_not_type_does_not_hide_the_others() -> None:
    found = _problems({"execution_mode": "dag", "steps": [
        _step("a", params=5), _step("b", depends_on=["zz"]), _step("c", params={"p": "${q.x}"}), _step("d", depends_on=["a"])]})
    assert found == ["steps[0].params: Expected `object`, got `int`",
                     "steps[1].depends_on[0]: step 'zz' does not exist",
                     "steps[2].params.p: reference ${q.x} names step 'q', which does not exist"]  # d needs a: it exists


def test_the_plans_own_problems_do_not_hide_its_capabilities() -> None:
    plan = ExecutionPlan(execution_mode="dag", steps=[
        ExecutionStep(id="a", capability="t.nowhere", depends_on=["zz"]),
        ExecutionStep(id="b", capability="t.work", params={"t.unknown": 1})])
    with pytest.raises(ManifestError) as caught:
        compile_plan(plan, {"t.work": CapabilityMetadata(id="t.work", outputs=["t.done"])})
    assert [str(p) for p in caught.value.problems] == [
        "steps[0].depends_on[0]: step 'zz' does not exist",
        "steps[0].capability: no capability 't.nowhere' is loaded",
        "steps[1].params.t.unknown: t.work takes no input 't.unknown' (it takes: none)"]


def test_params_nested_too_deep_are_not_walked_while_the_rest_is_checked() -> None:
    # The walk for references recurses: it ran only on a plan without problems, so checking
    # the rest of a plan must leave params nested too deep alone (a RecursionError otherwise).
    deep: dict = {}
    for _ in range(3_000):
        deep = {"k": deep}
    plan = ExecutionPlan(execution_mode="dag", steps=[
        ExecutionStep(id="a", capability="t.work", params={"p": deep}), ExecutionStep(id="b", capability="t.nowhere")])
    with pytest.raises(ManifestError) as caught:
        compile_plan(plan, {"t.work": CapabilityMetadata(id="t.work")})
    assert [str(p) for p in caught.value.problems] == [
        "steps[0].params: nested deeper than 100 levels", "steps[0].params.p: t.work takes no input 'p' (it takes: none)",
        "steps[1].capability: no capability 't.nowhere' is loaded"]
    found = _problems({"execution_mode": "dag", "steps": [_step("a", params={"p": deep}), _step("b", depends_on=["zz"])]})
    assert found == ["steps[0].params: nested deeper than 100 levels", "steps[1].depends_on[0]: step 'zz' does not exist"]


def test_past_fifty_cycles_the_rest_are_not_named_and_the_check_ends() -> None:
    steps = []
    for i in range(60):
        steps += [_step(f"a{i}", depends_on=[f"b{i}"]), _step(f"b{i}", depends_on=[f"a{i}"], params={"p": f"${{a{i}.x}}"})]
    found = _problems({"execution_mode": "dag", "steps": steps})
    assert len(found) == 50 and all("steps form a cycle" in p for p in found)  # no reference judged: ancestry unknown
