"""Domain manifests and the entity rules of seed 004."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ontoflow.protocols import ManifestError, check_entities, decode_document, domain_from_data

REPO = Path(__file__).resolve().parents[2]


def _domain(**goal_extra: Any) -> dict[str, Any]:
    goal = {
        "id": "TOP_MOVERS",
        "entities_schema": {
            "direction": {
                "type": "enum",
                "values": ["GAINERS", "LOSERS", "BOTH"],
                "default": "BOTH",
                "capability_map": {"GAINERS": "f.gainers", "LOSERS": "f.losers", "BOTH": ["f.gainers", "f.losers"]},
            },
            "market_text": {"type": "string", "description": "the market"},
        },
    }
    goal.update(goal_extra)
    return {"domain": "finance", "capabilities": ["f.gainers", "f.losers", "f.quote"], "goals": [goal]}


@pytest.mark.parametrize("folder", ["finance", "building_domain"])
def test_the_shipped_domains_are_valid(folder: str) -> None:
    path = REPO / "configs" / "examples" / folder / "domain.yaml"
    manifest = domain_from_data(decode_document(path.read_bytes(), "yaml"), source=str(path))
    assert manifest.goals


def test_a_sound_domain_loads_with_its_defaults() -> None:
    manifest = domain_from_data(_domain())
    assert manifest.confidence_threshold == 0.94
    assert manifest.goals[0].mapping_entity == "direction"


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        ({"entities_schema": {"symbol_text": {"type": "enum", "values": ["A"]}}, "capability": "f.quote"}, "goals[0].entities_schema.symbol_text.type", "user's words"),
        ({"entities_schema": {"d": {"type": "enum", "values": ["A", "B"], "capability_map": {"A": "f.quote"}}}}, "goals[0].entities_schema.d.capability_map", "'B' maps to no capability"),
        ({"entities_schema": {"d": {"type": "enum", "values": ["A"], "default": "Z", "capability_map": {"A": "f.quote"}}}}, "goals[0].entities_schema.d.default", "not one of the values"),
        ({"entities_schema": {"d": {"type": "enum", "values": ["A"], "capability_map": {"A": "f.nowhere"}}}}, "goals[0].entities_schema.d.capability_map.A", "not in the domain's capabilities"),
        ({"entities_schema": {"n": {"type": "string", "patterns": ["preço (.+)"]}}, "capability": "f.quote"}, "goals[0].entities_schema.n.patterns[0]", "group named 'value'"),
        ({"entities_schema": {}}, "goals[0].capability", "needs a capability"),
    ],
)
def test_manifest_problems_name_their_path(change: dict[str, Any], path: str, words: str) -> None:
    with pytest.raises(ManifestError) as info:
        domain_from_data(_domain(**change))
    assert any(p.path == path and words in p.message for p in info.value.problems), info.value.problems


def test_an_unknown_field_is_an_error_with_its_path() -> None:
    data = _domain()
    data["goals"][0]["entities_schema"]["market_text"]["requird"] = True
    with pytest.raises(ManifestError, match="requird"):
        domain_from_data(data)


def _goal():
    return domain_from_data(_domain()).goals[0]


def test_an_entity_the_goal_does_not_declare_is_refused() -> None:
    problems = check_entities(_goal(), {"ticker": "NDA-SE.ST", "direction": "GAINERS"}, "maiores altas")
    assert [p.path for p in problems] == ["entities.ticker"]
    assert "NDA-SE.ST" not in str(problems[0])


def test_enum_values_must_be_exact() -> None:
    assert check_entities(_goal(), {"direction": "GAINERS"}, "x") == []
    for wrong in ("gainers", "UP", 1, None):
        assert [p.path for p in check_entities(_goal(), {"direction": wrong}, "x")] == ["entities.direction"]


def test_text_entities_carry_the_users_words() -> None:
    assert check_entities(_goal(), {"market_text": "Suécia"}, "altas da SUECIA hoje") == []
    problems = check_entities(_goal(), {"market_text": "OMX Stockholm"}, "altas da Suécia")
    assert "user's own words" in problems[0].message
    assert check_entities(_goal(), {"market_text": 3}, "x")[0].message == "must be a string, got int"


def test_number_boolean_date_and_many() -> None:
    manifest = domain_from_data(
        {
            "domain": "d",
            "capabilities": ["c"],
            "goals": [{"id": "G", "capability": "c", "entities_schema": {
                "n": {"type": "number"}, "b": {"type": "boolean"}, "day": {"type": "date"},
                "names_text": {"type": "string", "many": True},
            }}],
        }
    )
    goal = manifest.goals[0]
    good = {"n": 2.5, "b": False, "day": "2026-02-17", "names_text": ["Vale", "Nordea"]}
    assert check_entities(goal, good, "Vale e Nordea") == []
    bad = {"n": True, "b": "yes", "day": "17/02/2026", "names_text": ["Vale", "Apple"]}
    assert [p.path for p in check_entities(goal, bad, "Vale e Nordea")] == [
        "entities.n", "entities.b", "entities.day", "entities.names_text",
    ]
