"""The deterministic matcher on the example domains: languages, accents, typos, entities, follow-ups."""

from __future__ import annotations

import pytest

from ontoflow.actors.intent import Matcher
from ontoflow.protocols import Turn

GATE = 0.94


@pytest.mark.parametrize(
    ("text", "goal", "entities"),
    [
        ("qual o preço da Nordea?", "GET_QUOTE", {"symbol_text": "Nordea"}),
        ("QUAL O PRECO DA PETROBRAS", "GET_QUOTE", {"symbol_text": "PETROBRAS"}),
        ("what's the price of Banco do Brasil today?", "GET_QUOTE", {"symbol_text": "Banco do Brasil"}),
        ("cotação da Vale e da Petrobras", "GET_QUOTE", {"symbol_text": ["Vale", "Petrobras"]}),
        ("preço da Vale e me avise", "GET_QUOTE", {"symbol_text": "Vale", "notify": True}),
        ("maiores altas do Brasil", "TOP_MOVERS", {"direction": "GAINERS", "market_text": "Brasil"}),
        ("biggest losers in Sweden", "TOP_MOVERS", {"direction": "LOSERS", "market_text": "Sweden"}),
        ("altas e baixas da Suécia", "TOP_MOVERS", {"direction": "BOTH", "market_text": "Suécia"}),
        ("list the pipes", "LIST_PIPES", {}),
        ("liste os tubos em português", "LIST_PIPES", {"lang": "pt_BR"}),
        ("exporte os tubos para out/tubos.csv", "EXPORT_PIPES", {"path_text": "out/tubos.csv"}),
        ("export the pipes to csv in portuguese", "EXPORT_PIPES", {"lang": "pt_BR"}),
    ],
)
def test_sentences_in_both_languages_pass_the_gate_with_their_entities(matcher: Matcher, text: str, goal: str, entities: dict) -> None:
    out = matcher.match(text)
    assert (out.goal, out.entities) == (goal, entities)
    assert out.confidence >= GATE
    assert out.original_query == text


def test_a_typo_still_matches_but_costs_confidence(matcher: Matcher) -> None:
    clean = matcher.match("cotacao da Vale")
    typo = matcher.match("cotaacao da Vale")
    assert typo.goal == clean.goal == "GET_QUOTE"
    assert typo.confidence < clean.confidence


def test_more_evidence_means_more_confidence_and_a_rival_means_less(matcher: Matcher) -> None:
    one = matcher.match("preço da Vale")
    two = matcher.match("qual a cotação, o preço da Vale?")
    assert two.confidence > one.confidence
    shared = matcher.match("tubos")  # both building goals say "tubos"
    assert shared.confidence < GATE
    assert {shared.goal, *(a.goal for a in shared.alternatives)} == {"LIST_PIPES", "EXPORT_PIPES"}


def test_nothing_to_go_on_gives_no_goal(matcher: Matcher) -> None:
    out = matcher.match("bom dia, tudo bem?")
    assert (out.goal, out.confidence) == ("", 0.0)


def test_a_follow_up_reads_against_the_previous_turn(matcher: Matcher) -> None:
    previous = Turn(domain="finance", goal="GET_QUOTE", entities={"symbol_text": "Nordea"})
    out = matcher.match("e da Petrobras?", previous=previous)
    assert (out.primary_domain, out.goal, out.entities) == ("finance", "GET_QUOTE", {"symbol_text": "Petrobras"})
    assert out.confidence >= GATE
    assert matcher.match("e da Petrobras?").goal == ""  # without memory it is not a guess


def test_the_matcher_is_deterministic(matcher: Matcher) -> None:
    texts = ["qual o preço da Nordea?", "top movers", "exporte os tubos"]
    assert [matcher.match(t) for t in texts] == [matcher.match(t) for t in texts]
