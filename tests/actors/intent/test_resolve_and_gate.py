"""The goal resolver (seed 004's table of cases) and the confidence gate."""

from __future__ import annotations

import pytest

from ontoflow.actors.intent import Catalogue, IntentRejected, confidence_gate, resolve_goal
from ontoflow.protocols import Alternative, CapabilityMetadata, IntentOutput, domain_from_data

SEED_TABLE = [
    # goal, entities, capabilities resolved (seed 004, "Casos")
    ("GET_QUOTE", {"symbol_text": "Nordea"}, ["get_stock_price"]),
    ("TOP_MOVERS", {"direction": "GAINERS"}, ["get_top_gainers"]),
    ("TOP_MOVERS", {"direction": "LOSERS"}, ["get_top_losers"]),
    ("TOP_MOVERS", {"direction": "BOTH"}, ["get_top_gainers", "get_top_losers"]),
]


def _catalogue(default: str | None = None, threshold: float = 0.94, domain: str = "finance") -> Catalogue:
    direction = {
        "type": "enum", "values": ["GAINERS", "LOSERS", "BOTH"], "required": True,
        "capability_map": {"GAINERS": "get_top_gainers", "LOSERS": "get_top_losers", "BOTH": ["get_top_gainers", "get_top_losers"]},
    }
    if default is not None:
        direction["default"] = default
    manifest = domain_from_data({
        "domain": domain,
        "confidence_threshold": threshold,
        "capabilities": ["get_stock_price", "get_top_gainers", "get_top_losers"],
        "goals": [
            {"id": "GET_QUOTE", "description": "get the price of a stock", "capability": "get_stock_price",
             "entities_schema": {"symbol_text": {"type": "string", "required": True, "description": "Nome/ticker como o usuário disse"}}},
            {"id": "TOP_MOVERS", "description": "the day's movers",
             "entities_schema": {"direction": direction, "market_text": {"type": "string", "param": "finance.market_text"}}},
        ],
    })
    return Catalogue([manifest], {c: CapabilityMetadata(id=c) for c in manifest.capabilities})


def _intent(goal: str, entities: dict, query: str = "qual o preço da Nordea? maiores altas do Brasil", conf: float = 0.95, domain: str = "finance") -> IntentOutput:
    return IntentOutput(primary_domain=domain, goal=goal, entities=entities, confidence=conf, original_query=query)


@pytest.mark.parametrize(("goal", "entities", "expected"), SEED_TABLE)
def test_the_seed_table(goal: str, entities: dict, expected: list[str]) -> None:
    resolution = resolve_goal(_intent(goal, entities), _catalogue())
    assert [i.capability for i in resolution.intents] == expected
    assert all(i.confidence == 0.95 and i.domain == "finance" for i in resolution.intents)


def test_no_direction_takes_the_declared_default_else_the_first() -> None:
    with_default = resolve_goal(_intent("TOP_MOVERS", {}), _catalogue(default="BOTH"))
    assert [i.capability for i in with_default.intents] == ["get_top_gainers", "get_top_losers"]
    assert with_default.entities["direction"] == "BOTH"
    first = resolve_goal(_intent("TOP_MOVERS", {}), _catalogue())
    assert [i.capability for i in first.intents] == ["get_top_gainers"]  # the seed's "fallback = first"


def test_entities_travel_under_their_param_keys() -> None:
    resolution = resolve_goal(_intent("TOP_MOVERS", {"direction": "GAINERS", "market_text": "Brasil"}), _catalogue())
    assert resolution.intents[0].parameters == {"direction": "GAINERS", "finance.market_text": "Brasil"}


def test_a_missing_required_entity_asks_for_it_by_its_description() -> None:
    resolution = resolve_goal(_intent("GET_QUOTE", {}), _catalogue())
    assert resolution.intents == []
    question = resolution.clarification
    assert question is not None and question.status == "clarification"
    assert "Nome/ticker como o usuário disse" in question.explanation
    assert question.result["missing"] == [{"entity": "symbol_text", "description": "Nome/ticker como o usuário disse"}]


@pytest.mark.parametrize(
    ("intent", "path"),
    [
        (_intent("SELL_EVERYTHING", {}), "goal"),
        (_intent("GET_QUOTE", {}, domain="weather"), "primary_domain"),
        (_intent("GET_QUOTE", {"symbol_text": "Nordea", "ticker": "NDA-SE.ST"}), "entities.ticker"),
        (_intent("GET_QUOTE", {"symbol_text": 42}), "entities.symbol_text"),
        (_intent("TOP_MOVERS", {"direction": "UP"}), "entities.direction"),
    ],
)
def test_intents_the_catalogue_refuses(intent: IntentOutput, path: str) -> None:
    with pytest.raises(IntentRejected) as info:
        resolve_goal(intent, _catalogue())
    assert [p.path for p in info.value.problems] == [path]


def test_the_gate_lets_a_sure_intent_through_and_turns_a_guess_into_a_question() -> None:
    cat = _catalogue()
    assert confidence_gate(_intent("GET_QUOTE", {}, conf=0.94), cat) is None
    unsure = IntentOutput(primary_domain="finance", goal="GET_QUOTE", confidence=0.93,
                          alternatives=[Alternative(domain="finance", goal="TOP_MOVERS", confidence=0.4)])
    question = confidence_gate(unsure, cat)
    assert question is not None and question.status == "clarification"
    assert [c["goal"] for c in question.result["candidates"]] == ["GET_QUOTE", "TOP_MOVERS"]
    assert question.result["candidates"][0]["description"] == "get the price of a stock"


def test_the_threshold_is_per_domain_and_general_is_exempt() -> None:
    strict = _catalogue(threshold=0.99)
    assert confidence_gate(_intent("GET_QUOTE", {}, conf=0.97), strict) is not None
    general = _catalogue(domain="general")
    assert confidence_gate(_intent("GET_QUOTE", {}, conf=0.1, domain="general"), general) is None


def test_nothing_matched_lists_every_goal() -> None:
    question = confidence_gate(IntentOutput(primary_domain="", goal="", confidence=0.0), _catalogue())
    assert question is not None
    assert [c["goal"] for c in question.result["candidates"]] == ["GET_QUOTE", "TOP_MOVERS"]
    assert question.metadata["resolution"] == "no_match"
