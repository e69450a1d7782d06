"""The planner (flow.pre, decomposition, parallel intents, composition parameters) and session memory."""

from __future__ import annotations

import anyio
import msgspec
import pytest

from ontoflow.actors.intent import (
    Catalogue,
    IntentRejected,
    Matcher,
    MemoryLimits,
    build_plan,
    inject_memory,
    recall,
    remember,
    understand,
)
from ontoflow.actors.orchestrator.plans import compile_plan
from ontoflow.protocols import EntryRequest, ExecutionIntent, IntentOutput, ManifestError, SessionMemory, Turn
from ontoflow.protocols.intent import INTENT_CONFIDENCE_PARAM, INTENT_PARAMS, INTENT_QUERY_PARAM


def _quote(symbols) -> ExecutionIntent:
    return ExecutionIntent(domain="finance", capability="finance.get_stock_price", parameters={"finance.symbol_text": symbols})


def test_flow_pre_places_the_search_before_the_step_it_serves(catalogue: Catalogue) -> None:
    planned = build_plan([_quote("Nordea")], catalogue, entities={"symbol_text": "Nordea"})
    plan = planned.plan
    assert [(s.id, s.capability, s.depends_on) for s in plan.steps] == [
        ("1-resolve_symbol", "finance.search_symbol", []),
        ("1", "finance.get_stock_price", ["1-resolve_symbol"]),
    ]
    assert plan.steps[0].params == {"finance.symbol_text": "Nordea"}
    assert plan.steps[1].params == {"finance.symbol_text": "Nordea", "finance.symbol": "${1-resolve_symbol.finance.symbol}"}
    assert planned.answer_steps == ("1",)
    assert plan.parameters == {"symbol_text": "Nordea"}  # what composition's enabled_if reads
    compile_plan(plan, catalogue.capabilities)  # runs on the existing plan engine


def test_a_list_parameter_is_decomposed_one_chain_per_element(catalogue: Catalogue) -> None:
    plan = build_plan([_quote(["Vale", "Petrobras"])], catalogue, entities={}).plan
    assert [(s.id, s.depends_on) for s in plan.steps] == [
        ("1-1-resolve_symbol", []), ("1-1", ["1-1-resolve_symbol"]),
        ("1-2-resolve_symbol", []), ("1-2", ["1-2-resolve_symbol"]),
    ]
    assert plan.steps[2].params == {"finance.symbol_text": "Petrobras"}
    assert plan.max_concurrency == 4
    compile_plan(plan, catalogue.capabilities)


def test_several_intents_run_in_parallel(catalogue: Catalogue) -> None:
    intents = [ExecutionIntent(domain="finance", capability=c, parameters={"finance.market_text": "Brasil", "direction": "BOTH"})
               for c in ("finance.get_top_gainers", "finance.get_top_losers")]
    plan = build_plan(intents, catalogue, entities={"direction": "BOTH", "market_text": "Brasil"}).plan
    assert [(s.id, s.depends_on, s.params) for s in plan.steps] == [
        ("1", [], {"finance.market_text": "Brasil"}),
        ("2", [], {"finance.market_text": "Brasil"}),
    ]


def test_a_list_for_a_capability_that_does_not_decompose_is_refused(catalogue: Catalogue) -> None:
    intent = ExecutionIntent(domain="building", capability="building.export_pipes", parameters={"infobim.export.path": ["a.csv", "b.csv"]})
    with pytest.raises(IntentRejected, match="several values"):
        build_plan([intent], catalogue, entities={})


def test_memory_is_bounded_per_session_by_age_and_in_sessions() -> None:
    limits = MemoryLimits(max_turns=2, max_age_ms=1000, max_sessions=2)
    memory = SessionMemory()
    for t in range(3):
        memory = remember(memory, "a", Turn(domain="d", goal=f"G{t}", at_ms=t), limits)
    assert [t.goal for t in memory.sessions["a"]] == ["G1", "G2"]
    assert recall(memory, "a", 500, limits).goal == "G2"
    assert recall(memory, "a", 5000, limits) is None  # too old
    memory = remember(memory, "b", Turn(domain="d", goal="B", at_ms=10), limits)
    memory = remember(memory, "c", Turn(domain="d", goal="C", at_ms=20), limits)
    assert sorted(memory.sessions) == ["b", "c"]


def test_inject_memory_carries_what_the_follow_up_does_not_restate(catalogue: Catalogue) -> None:
    previous = Turn(domain="finance", goal="TOP_MOVERS", entities={"direction": "GAINERS", "market_text": "Brasil"})
    now = IntentOutput(primary_domain="finance", goal="TOP_MOVERS", confidence=0.96, entities={"direction": "LOSERS"})
    assert inject_memory(now, previous, catalogue).entities == {"direction": "LOSERS", "market_text": "Brasil"}
    other = IntentOutput(primary_domain="finance", goal="GET_QUOTE", confidence=0.96, entities={"symbol_text": "x"})
    assert inject_memory(other, previous, catalogue) is other


def _ask(text: str, catalogue: Catalogue, matcher: Matcher, memory: SessionMemory, now: int):
    async def go():
        return await understand(EntryRequest(session_id="s1", input_text=text), catalogue=catalogue, adapter=matcher, memory=memory, now_ms=now)

    return anyio.run(go, backend="asyncio")


def test_a_conversation_with_a_follow_up(catalogue: Catalogue, matcher: Matcher) -> None:
    first = _ask("maiores altas do Brasil", catalogue, matcher, SessionMemory(), 1_000)
    assert [s.capability for s in first.planned.plan.steps] == ["finance.get_top_gainers"]
    second = _ask("e as baixas?", catalogue, matcher, first.memory, 2_000)
    assert [s.capability for s in second.planned.plan.steps] == ["finance.get_top_losers"]
    assert second.planned.plan.steps[0].params == {"finance.market_text": "Brasil"}
    third = _ask("e da Suécia?", catalogue, matcher, second.memory, 3_000)
    assert third.intent.entities == {"direction": "LOSERS", "market_text": "Suécia"}
    assert len(third.memory.sessions["s1"]) == 3
    fresh = _ask("top movers in Sweden", catalogue, matcher, third.memory, 4_000)
    assert fresh.intent.entities == {"market_text": "Sweden"}  # a whole question: nothing carried
    assert [s.capability for s in fresh.planned.plan.steps] == ["finance.get_top_gainers", "finance.get_top_losers"]


def test_an_unsure_sentence_is_a_question_and_remembers_nothing(catalogue: Catalogue, matcher: Matcher) -> None:
    memory = SessionMemory()
    out = _ask("tubos", catalogue, matcher, memory, 1_000)
    assert out.planned is None and out.clarification.status == "clarification"
    assert out.memory is memory


@pytest.mark.parametrize("text", ["", "   ", "x" * 100_000])
def test_bad_text_is_rejected_before_the_adapter(catalogue: Catalogue, matcher: Matcher, text: str) -> None:
    with pytest.raises(IntentRejected, match="input_text"):
        _ask(text, catalogue, matcher, SessionMemory(), 1)


def test_the_front_half_logs_keys_and_figures_never_the_users_words(catalogue: Catalogue, matcher: Matcher) -> None:
    from structlog.testing import capture_logs

    with capture_logs() as logs:
        _ask("qual o preço da Zyxwvutsr?", catalogue, matcher, SessionMemory(), 1)
        _ask("tubos xyzzyplugh", catalogue, matcher, SessionMemory(), 1)
    events = [e["event"] for e in logs]
    assert events == ["intent_classified", "intent_planned", "intent_classified", "intent_gated"]
    assert logs[0]["entity_keys"] == ["symbol_text"]
    assert "Zyxwvutsr" not in repr(logs) and "xyzzyplugh" not in repr(logs)


def test_the_answer_to_a_missing_entity_question_completes_the_turn(catalogue: Catalogue, matcher: Matcher) -> None:
    asked = _ask("qual a cotação?", catalogue, matcher, SessionMemory(), 1_000)
    assert asked.clarification.metadata["resolution"] == "missing_entity"
    assert asked.memory.sessions["s1"][-1].pending == ["symbol_text"]
    answered = _ask("Petrobras", catalogue, matcher, asked.memory, 2_000)
    assert answered.intent.goal == "GET_QUOTE" and answered.intent.entities == {"symbol_text": "Petrobras"}
    assert answered.planned is not None
    assert answered.memory.sessions["s1"][-1].pending == []
    assert _ask("Petrobras", catalogue, matcher, answered.memory, 3_000).planned is None  # nothing pending any more


def test_a_step_whose_capability_declares_the_intent_inputs_gets_the_confidence_and_sentence(catalogue: Catalogue) -> None:
    # An HTTP domain bridge declares them (protocols.intent.INTENT_PARAMS); the others never see them.
    meta = catalogue.capabilities["finance.get_stock_price"]
    schema = {**meta.input_schema, "properties": {**meta.input_schema["properties"],
                                                  **{k: {} for k in INTENT_PARAMS}}}
    opted_in = Catalogue(list(catalogue.domains.values()),
                         {**catalogue.capabilities, meta.id: msgspec.structs.replace(meta, input_schema=schema)})
    intent = msgspec.structs.replace(_quote("Nordea"), confidence=0.97, original_query="qual o preço da Nordea?")
    plan = build_plan([intent], opted_in, entities={"symbol_text": "Nordea"}).plan
    search, served = plan.steps
    assert served.params[INTENT_CONFIDENCE_PARAM] == 0.97
    assert served.params[INTENT_QUERY_PARAM] == "qual o preço da Nordea?"
    assert not set(INTENT_PARAMS) & set(search.params)
    assert not set(INTENT_PARAMS) & {k for s in build_plan([intent], catalogue, entities={}).plan.steps for k in s.params}
    compile_plan(plan, opted_in.capabilities)


def test_a_sentence_holding_a_reference_sign_reaches_the_capability_as_written(catalogue: Catalogue) -> None:
    # The plan engine reads ${step.field} in params as a reference: what a person typed is
    # text, so the planner writes it with the $${ escape, never as a reference.
    from tests.actors.plans.helpers import Driver

    typed = "Nordea ${1.explanation} $${x} ${"
    intent = ExecutionIntent(domain="finance", capability="finance.get_stock_price",
                             parameters={"finance.symbol_text": typed}, original_query=f"quote {typed}")
    plan = build_plan([intent], catalogue, entities={"symbol_text": typed}).plan
    run = Driver(compile_plan(plan, catalogue.capabilities))
    run.submit()
    sent = run.in_flight["1-resolve_symbol"].inputs
    assert sent["finance.symbol_text"] == typed


def test_entities_nested_past_the_plans_bound_are_refused_by_the_plan_not_a_recursion_error(catalogue: Catalogue) -> None:
    deep: object = "x ${"
    for _ in range(5_000):
        deep = {"k": deep}
    intent = ExecutionIntent(domain="finance", capability="finance.get_stock_price", parameters={"finance.symbol_text": deep})
    plan = build_plan([intent], catalogue, entities={}).plan
    with pytest.raises(ManifestError, match="nest"):
        compile_plan(plan, catalogue.capabilities)


def test_a_list_entity_too_deep_to_compare_is_refused_with_a_reason_not_a_recursion_error(catalogue: Catalogue) -> None:
    deep: object = "Vale"
    for _ in range(5_000):
        deep = [deep]
    with pytest.raises(IntentRejected):
        build_plan([_quote([deep, "Vale"])], catalogue, entities={})
