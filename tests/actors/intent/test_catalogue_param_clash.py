"""A goal whose entities would reach its capability under one input key is refused at load.

Before: ``company_text`` and ``ticker_text`` both declared ``param: c.symbol_text``; the
resolver passed whichever the adapter happened to list last and dropped the other without a
word (and an entity passed as a key the planner reserves was overwritten by it)."""

from __future__ import annotations

import pytest

from ontoflow.actors.intent import Catalogue
from ontoflow.protocols import CapabilityMetadata, ManifestError
from ontoflow.protocols.domain import domain_from_data
from ontoflow.protocols.intent import INTENT_QUERY_PARAM

QUOTE = CapabilityMetadata(id="c.quote", input_schema={"type": "object", "properties": {"c.symbol_text": {}}})


def _catalogue(entities: dict) -> Catalogue:
    domain = domain_from_data({"domain": "c", "capabilities": ["c.quote"],
                               "goals": [{"id": "QUOTE", "capability": "c.quote", "entities_schema": entities}]})
    return Catalogue([domain], {QUOTE.id: QUOTE})


def test_two_entities_passing_as_one_key_are_refused_naming_both() -> None:
    with pytest.raises(ManifestError) as caught:
        _catalogue({"company_text": {"param": "c.symbol_text"}, "ticker_text": {"param": "c.symbol_text"}})
    text = str(caught.value)
    assert "c.goals[0].entities_schema.ticker_text.param" in text and "'company_text'" in text


def test_an_entity_named_as_another_ones_param_clashes_too() -> None:
    with pytest.raises(ManifestError, match="entities_schema.shared.param"):
        _catalogue({"c_symbol": {"param": "shared"}, "shared": {}})


def test_an_entity_passing_as_a_reserved_key_is_refused() -> None:
    with pytest.raises(ManifestError, match="reserved"):
        _catalogue({"query_text": {"param": INTENT_QUERY_PARAM}})


def test_distinct_keys_load() -> None:
    assert _catalogue({"company_text": {"param": "c.symbol_text"}, "market_text": {}}).domains["c"]
