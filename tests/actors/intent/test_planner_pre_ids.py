"""Each ``flow.pre`` step the planner places gets a step id of its own.

Before: a capability comparing two companies declared two ``flow.pre`` steps of one type
(``resolve_symbol``, one per param): the planner named both ``1-resolve_symbol``, and the plan
it handed the engine was refused ("steps[1].id: duplicate of steps[0].id"), so a sound domain's
goal could never run. A long type made an id past the 128 characters a step id may have."""

from __future__ import annotations

from ontoflow.actors.intent import Catalogue, build_plan
from ontoflow.actors.orchestrator.plans import compile_plan
from ontoflow.protocols import CapabilityMetadata, ExecutionIntent
from ontoflow.protocols.domain import domain_from_data
from ontoflow.protocols.plan import check_plan


def _catalogue(kind_a: str, kind_b: str) -> Catalogue:
    search = CapabilityMetadata(id="c.search", outputs=["c.a", "c.b"],
                                input_schema={"type": "object", "properties": {"c.a_text": {}, "c.b_text": {}}})
    compare = CapabilityMetadata(
        id="c.compare", outputs=["ontoflow.domain.output"],
        input_schema={"type": "object", "properties": {"c.a": {}, "c.b": {}, "c.a_text": {}, "c.b_text": {}},
                      "required": ["c.a", "c.b"]},
        flow={"pre": [{"type": kind_a, "param": "c.a", "search_capability": "c.search"},
                      {"type": kind_b, "param": "c.b", "search_capability": "c.search"}]},
    )
    domain = domain_from_data({"domain": "c", "capabilities": ["c.search", "c.compare"], "goals": [
        {"id": "COMPARE", "capability": "c.compare",
         "entities_schema": {"a_text": {"param": "c.a_text"}, "b_text": {"param": "c.b_text"}}}]})
    return Catalogue([domain], {m.id: m for m in (search, compare)})


def _plan(catalogue: Catalogue):
    intent = ExecutionIntent(domain="c", capability="c.compare", parameters={"c.a_text": "Vale", "c.b_text": "Petrobras"})
    return build_plan([intent], catalogue, entities={}).plan


def test_two_pre_steps_of_one_type_get_two_ids_and_the_plan_compiles() -> None:
    catalogue = _catalogue("resolve_symbol", "resolve_symbol")
    plan = _plan(catalogue)
    assert [(s.id, s.depends_on) for s in plan.steps] == [
        ("1-resolve_symbol", []), ("1-resolve_symbol-2", []), ("1", ["1-resolve_symbol", "1-resolve_symbol-2"]),
    ]
    assert plan.steps[2].params["c.a"] == "${1-resolve_symbol.c.a}"
    assert plan.steps[2].params["c.b"] == "${1-resolve_symbol-2.c.b}"
    assert check_plan(plan) == []
    compile_plan(plan, catalogue.capabilities)


def test_types_that_read_alike_or_run_long_still_give_valid_distinct_ids() -> None:
    catalogue = _catalogue("resolve symbol", "resolve_symbol" + "x" * 300)
    plan = _plan(catalogue)
    assert check_plan(plan) == []
    assert len({s.id for s in plan.steps}) == 3 and all(len(s.id) <= 128 for s in plan.steps)
    catalogue = _catalogue("resolve symbol", "resolve_symbol")  # one id once the space is replaced
    assert check_plan(_plan(catalogue)) == []


def test_a_long_goal_name_does_not_make_a_plan_refused_for_its_name() -> None:
    """Before: the plan's name ``ask:<domain>.<goal>`` took ids of any length (a goal id has no
    bound), and a plan named past 256 characters was refused: the goal could never run."""
    catalogue = _catalogue("resolve_symbol", "resolve_symbol")
    intent = ExecutionIntent(domain="c", capability="c.compare", parameters={"c.a_text": "Vale", "c.b_text": "Petrobras"})
    plan = build_plan([intent], catalogue, entities={}, name="ask:c." + "G" * 400).plan
    assert check_plan(plan) == [] and plan.name.startswith("ask:c.GGG")


def test_a_huge_pre_type_does_not_make_a_description_past_the_plans_bound() -> None:
    catalogue = _catalogue("r" * 20_000, "resolve_symbol")
    assert check_plan(_plan(catalogue)) == []
