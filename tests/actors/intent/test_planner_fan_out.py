"""A sentence's list fans out to distinct elements, and to a bounded number of them.

Before: an adapter's (a model's) list of 20,000 "Vale" for ``symbol_text`` (each one "in the
sentence") was a plan of 40,000 steps, and "Vale, vale" two quotes of the same company."""

from __future__ import annotations

import pytest

from ontoflow.actors.intent import IntentRejected
from ontoflow.actors.intent._pipeline import conclude
from ontoflow.protocols.intent import EntryRequest, IntentOutput, SessionMemory


def _conclude(catalogue, symbols: list, text: str):
    intent = IntentOutput(primary_domain="finance", goal="GET_QUOTE", entities={"symbol_text": symbols},
                          confidence=0.99, original_query=text)
    return conclude(EntryRequest(session_id="s1", input_text=text), intent, None, catalogue=catalogue,
                    memory=SessionMemory(), now_ms=0)


def _quoted(planned) -> list[str]:
    return [s.params["finance.symbol_text"] for s in planned.plan.steps if s.capability == "finance.get_stock_price"]


def test_the_same_company_said_twice_is_asked_for_once(catalogue) -> None:
    understood = _conclude(catalogue, ["Vale", "Petrobras", "vale ", *["Vale"] * 20_000], "preço da Vale e da Petrobras")
    assert _quoted(understood.planned) == ["Vale", "Petrobras"]


def test_more_companies_than_a_sentence_may_fan_out_to_are_refused(catalogue) -> None:
    names = [f"c{n:02d}" for n in range(40)]
    with pytest.raises(IntentRejected, match="40 different values; one sentence may ask for at most 32") as caught:
        _conclude(catalogue, names, "preço de " + " ".join(names))
    assert "c01" not in str(caught.value)
