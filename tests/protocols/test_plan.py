"""ExecutionPlan parsing and its static checks, each with its path."""

from __future__ import annotations

import pytest

from ontoflow.protocols import ExecutionPlan, ManifestError, check_plan, find_references, plan_dependencies, plan_from_data
from ontoflow.protocols.plan import MAX_PLAN_STEPS


def _problems(data: dict) -> dict[str, str]:
    with pytest.raises(ManifestError) as info:
        plan_from_data(data)
    return {p.path: p.message for p in info.value.problems}


def _step(sid, cap="c.x", **fields):
    return {"id": sid, "capability": cap, **fields}


def test_seed_plan_with_integer_ids_is_read() -> None:
    plan = plan_from_data({
        "execution_mode": "dag", "combine_mode": "report",
        "steps": [_step(1, params={"symbol": "PETR4.SA"}), _step(2, params={"message": "${1.explanation}"}, depends_on=[1], required=False)],
    })
    assert [s.id for s in plan.steps] == ["1", "2"]
    assert plan.steps[1].depends_on == ["1"] and plan.steps[1].required is False


def test_typing_problems_of_every_step_are_reported_with_paths() -> None:
    problems = _problems({"steps": [_step("a", bogus=1), {"id": "b"}], "max_concurrency": "x"})
    assert "steps[0].bogus" in problems
    assert "steps[1].capability" in problems
    assert "max_concurrency" in problems


def test_ids_dependencies_and_cycles() -> None:
    problems = _problems({"steps": [_step("a", depends_on=["zz"]), _step("a"), _step("b c"), _step("d", depends_on=["d"])]})
    assert problems["steps[0].depends_on[0]"] == "step 'zz' does not exist"
    assert problems["steps[1].id"].startswith("duplicate of steps[0]")
    assert "steps[2].id" in problems
    assert problems["steps[3].depends_on[0]"] == "a step cannot depend on itself"
    cyc = _problems({"steps": [_step("a", depends_on=["b"]), _step("b", depends_on=["a"])]})
    assert any("cycle" in m for m in cyc.values())


def test_parallel_plans_take_no_depends_on() -> None:
    problems = _problems({"execution_mode": "parallel", "steps": [_step("a"), _step("b", depends_on=["a"])]})
    assert "steps[1].depends_on[0]" in problems


def test_references_must_be_well_formed_and_name_an_ancestor() -> None:
    problems = _problems({
        "steps": [
            _step("a"),
            _step("b", params={"m": "${a}", "n": ["${a.x[}"]}, depends_on=["a"]),
            _step("c", params={"message": {"text": "hi ${b.y}"}}),
            _step("d", params={"k": "${nope.y}"}),
        ]
    })
    assert "must name a field" in problems["steps[1].params.m"]
    assert "malformed" in problems["steps[1].params.n[0]"]
    assert "not an ancestor of step 'c'" in problems["steps[2].params.message.text"]
    assert "does not exist" in problems["steps[3].params.k"]


def test_sequential_mode_chains_steps_so_references_to_earlier_steps_are_fine() -> None:
    plan = plan_from_data({"execution_mode": "sequential", "steps": [_step("a"), _step("b"), _step("c", params={"x": "${a.v}"})]})
    assert plan_dependencies(plan) == {"a": [], "b": ["a"], "c": ["b"]}
    assert check_plan(plan) == []


def test_find_references_parses_nested_fields_and_indexes() -> None:
    [(path, ref)] = list(find_references({"k": "${s1.data.rows[2].name}"}, "params"))
    assert path == "params.k"
    assert ref.step == "s1" and ref.path == ("data", "rows", 2, "name") and ref.field == "data.rows[2].name"


def test_plan_built_in_code_is_checked_too() -> None:
    plan = ExecutionPlan(steps=[], max_concurrency=0)
    assert {p.path for p in check_plan(plan)} == {"steps", "max_concurrency"}


def _chain(n: int, *, dense: bool = False) -> dict:
    steps = []
    for i in range(n):
        deps = [f"s{j}" for j in range(i)] if dense else ([f"s{i - 1}"] if i else [])
        steps.append({"id": f"s{i}", "capability": "acme.step", "depends_on": deps})
    return {"steps": steps}


@pytest.mark.parametrize(
    ("data", "says"),
    [
        # 3,000 chained steps held a daemon's loop for about a minute (the checks and the
        # compilation follow every step's ancestors), long enough to lose its workers.
        (_chain(3_000), "3000 steps; a plan has at most 500"),
        (_chain(120, dense=True), "7140 depends_on entries in all; a plan has at most 5000"),
    ],
    ids=["long-chain", "dense-dag"],
)
def test_a_plan_past_the_size_bounds_is_refused_before_its_checks(data: dict, says: str) -> None:
    with pytest.raises(ManifestError) as caught:
        plan_from_data(data, source="big.yaml")
    [problem] = caught.value.problems
    assert problem.path == "steps" and problem.message == says


def test_a_plan_at_the_size_bounds_is_accepted() -> None:
    assert len(plan_from_data(_chain(MAX_PLAN_STEPS)).steps) == MAX_PLAN_STEPS
    assert len(plan_from_data(_chain(100, dense=True)).steps) == 100  # 4,950 dependencies
