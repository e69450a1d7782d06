"""Two entities given that a goal passes as one input key are refused, never one dropped.

Before: ``company_text`` and ``ticker_text`` both declared ``param: c.symbol_text``; the
resolver passed whichever the adapter happened to list last and dropped the other without a
word (and an entity passed as a key the planner reserves was overwritten by it).

(Refused when a sentence gives both, not when the catalogue loads: the daemon's domain book
admits a domain by ``protocols.domain.check_domain`` and builds the catalogue of every admitted
one, so a catalogue that refused more than ``check_domain`` would fail every domain's sentences.)"""

from __future__ import annotations

import pytest

from ontoflow.actors.intent import Catalogue, IntentRejected, resolve_goal
from ontoflow.protocols import CapabilityMetadata
from ontoflow.protocols.domain import domain_from_data
from ontoflow.protocols.intent import INTENT_QUERY_PARAM, IntentOutput

QUOTE = CapabilityMetadata(id="c.quote", input_schema={"type": "object", "properties": {"c.symbol_text": {}}})


def _resolve(entities_schema: dict, entities: dict):
    domain = domain_from_data({"domain": "c", "capabilities": ["c.quote"],
                               "goals": [{"id": "QUOTE", "capability": "c.quote", "entities_schema": entities_schema}]})
    catalogue = Catalogue([domain], {QUOTE.id: QUOTE})  # loads: the clash is the sentence's to meet
    text = " ".join(str(v) for v in entities.values())
    intent = IntentOutput(primary_domain="c", goal="QUOTE", confidence=1.0, entities=entities, original_query=text)
    return resolve_goal(intent, catalogue)


SHARED = {"company_text": {"param": "c.symbol_text"}, "ticker_text": {"param": "c.symbol_text"}}


def test_two_entities_given_for_one_key_are_refused_naming_both() -> None:
    with pytest.raises(IntentRejected) as caught:
        _resolve(SHARED, {"company_text": "Vale", "ticker_text": "Petrobras"})
    text = str(caught.value)
    assert "entities.ticker_text" in text and "'company_text'" in text and "Vale" not in text


def test_one_of_them_alone_resolves() -> None:
    [intent] = _resolve(SHARED, {"ticker_text": "Petrobras"}).intents
    assert intent.parameters == {"c.symbol_text": "Petrobras"}


def test_an_entity_passing_as_a_reserved_key_is_refused() -> None:
    with pytest.raises(IntentRejected, match="reserves"):
        _resolve({"query_text": {"param": INTENT_QUERY_PARAM}}, {"query_text": "Vale"})
