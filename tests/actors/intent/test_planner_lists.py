"""The planner's lists: one list fans a step out; a second is refused; one value where several
may be reaches the single parameter.

Before, for a capability whose rules fan ``c.symbols_text`` out as ``c.symbol_text`` and
``c.markets_text`` as ``c.market_text`` (seed 004's ``symbols`` -> ``symbol``):
* lists for both: the plan fanned out over the symbols and dropped the markets without a word;
* one market said as a plain value (a ``many`` entity may be one value): dropped too, since
  the capability takes ``c.market_text``, not ``c.markets_text``."""

from __future__ import annotations

import pytest

from ontoflow.actors.intent import Catalogue, IntentRejected, build_plan
from ontoflow.protocols import ArrayParam, CapabilityMetadata, Decomposition, ExecutionIntent
from ontoflow.protocols.domain import domain_from_data

QUOTE = CapabilityMetadata(
    id="c.quote", input_schema={"type": "object", "properties": {"c.symbol_text": {}, "c.market_text": {}}},
    decomposition=Decomposition(array_params=[
        ArrayParam(param_name="c.symbols_text", single_param_name="c.symbol_text", max_concurrency=4),
        ArrayParam(param_name="c.markets_text", single_param_name="c.market_text", max_concurrency=4)]))
DOMAIN = domain_from_data({"domain": "c", "capabilities": ["c.quote"], "goals": [
    {"id": "QUOTE", "capability": "c.quote", "entities_schema": {
        "symbol_text": {"param": "c.symbols_text", "many": True}, "market_text": {"param": "c.markets_text", "many": True}}}]})
CATALOGUE = Catalogue([DOMAIN], {QUOTE.id: QUOTE})


def _plan(**parameters):
    intent = ExecutionIntent(domain="c", capability="c.quote", parameters=parameters)
    return build_plan([intent], CATALOGUE, entities={}).plan


def test_lists_for_two_fan_out_rules_are_refused_not_one_dropped() -> None:
    with pytest.raises(IntentRejected, match="parameters.c.markets_text"):
        _plan(**{"c.symbols_text": ["Vale", "Nordea"], "c.markets_text": ["Brasil", "Suecia"]})


def test_one_value_where_several_may_be_reaches_the_single_parameter() -> None:
    plan = _plan(**{"c.symbols_text": ["Vale", "Nordea"], "c.markets_text": "Brasil"})
    assert [s.params for s in plan.steps] == [{"c.symbol_text": "Vale", "c.market_text": "Brasil"},
                                              {"c.symbol_text": "Nordea", "c.market_text": "Brasil"}]
    plan = _plan(**{"c.symbols_text": "Vale"})
    assert [s.params for s in plan.steps] == [{"c.symbol_text": "Vale"}]


@pytest.mark.parametrize("limit", [0, -3, True])
def test_a_rules_concurrency_under_one_plans_one_at_a_time(limit) -> None:
    """Before: the rule's 0 (or -3) became the plan's ``max_concurrency``, which the plan's own
    check refuses, so the sentence failed; a True became a plan no journal could decode."""
    from ontoflow.protocols.plan import check_plan

    rule = ArrayParam(param_name="c.symbols_text", single_param_name="c.symbol_text", max_concurrency=limit)
    quote = CapabilityMetadata(id="c.quote", input_schema=QUOTE.input_schema,
                               decomposition=Decomposition(array_params=[rule]))
    catalogue = Catalogue([DOMAIN], {quote.id: quote})
    intent = ExecutionIntent(domain="c", capability="c.quote", parameters={"c.symbols_text": ["Vale", "Nordea"]})
    plan = build_plan([intent], catalogue, entities={}).plan
    assert plan.max_concurrency == 1 and type(plan.max_concurrency) is int and check_plan(plan) == []


@pytest.mark.parametrize(("schema", "takes"), [(True, True), (False, False), ({"type": ["array", "null"]}, True),
                                               ({"type": "string"}, False), ({}, False)])
def test_a_list_for_an_input_is_read_against_any_schema_the_input_may_have(schema, takes: bool) -> None:
    """Before: a boolean schema (``true``: anything) raised AttributeError in the planner, which
    crashed the Planner actor; a type list holding "array" was refused."""
    quote = CapabilityMetadata(id="c.quote", input_schema={"type": "object", "properties": {"c.symbols_text": schema}})
    catalogue = Catalogue([DOMAIN], {quote.id: quote})
    intent = ExecutionIntent(domain="c", capability="c.quote", parameters={"c.symbols_text": ["Vale", "Nordea"]})
    if takes:
        assert build_plan([intent], catalogue, entities={}).plan.steps[0].params == {"c.symbols_text": ["Vale", "Nordea"]}
    else:
        with pytest.raises(IntentRejected, match="several values"):
            build_plan([intent], catalogue, entities={})


def test_a_sentence_planning_more_steps_than_a_plan_may_have_is_refused_in_its_words() -> None:
    """Before: 20 capabilities for one value, each fanned out to 32 companies, made a plan of
    640 steps the engine refused ("the plan for this question cannot run here: steps: ...")."""
    from ontoflow.protocols.plan import MAX_PLAN_STEPS

    many = [CapabilityMetadata(id=f"c.q{n:02d}", input_schema=QUOTE.input_schema, decomposition=QUOTE.decomposition)
            for n in range(20)]
    catalogue = Catalogue([DOMAIN], {QUOTE.id: QUOTE, **{m.id: m for m in many}})
    names = [f"company {n}" for n in range(32)]
    intents = [ExecutionIntent(domain="c", capability=m.id, parameters={"c.symbols_text": names}) for m in many]
    with pytest.raises(IntentRejected, match=f"asks for 640 steps; a plan has at most {MAX_PLAN_STEPS}"):
        build_plan(intents, catalogue, entities={})
