"""The entry and intent contracts: strict decoding, the entry's checks, one text folding."""

from __future__ import annotations

import msgspec
import pytest

from ontoflow.protocols import CapabilityMetadata, EntryRequest, check_entry, check_metadata, decode_intent_output, flow_pre, fold, intent_hints
from ontoflow.protocols.intent import MAX_INPUT_CHARS


def test_fold_drops_case_and_accents_and_keeps_offsets() -> None:
    text = "Qual é a COTAÇÃO da Nordea? ﬁm İ"
    folded = fold(text)
    assert len(folded) == len(text)
    assert folded.startswith("qual e a cotacao da nordea?")


@pytest.mark.parametrize(
    ("session", "text", "path"),
    [
        ("s1", "", "input_text"),
        ("s1", " \t\n ", "input_text"),
        ("s1", "x" * 100_000, "input_text"),
        ("../../etc/passwd", "preço da Vale", "session_id"),
        ("a b", "preço da Vale", "session_id"),
        ("", "preço da Vale", "session_id"),
        ("s" * 65, "preço da Vale", "session_id"),
    ],
)
def test_bad_entries_are_refused_with_the_field_named(session: str, text: str, path: str) -> None:
    problems = check_entry(EntryRequest(session_id=session, input_text=text))
    assert [p.path for p in problems] == [path]
    assert "passwd" not in str(problems[0]) and "xxxx" not in str(problems[0])


def test_a_good_entry_passes() -> None:
    assert check_entry(EntryRequest(session_id="user-abc123", input_text="qual o preço da Nordea?")) == []
    assert check_entry(EntryRequest(session_id="u", input_text="x" * MAX_INPUT_CHARS)) == []


def test_intent_output_decodes_strictly() -> None:
    ok = decode_intent_output(b'{"primary_domain":"finance","goal":"GET_QUOTE","confidence":0.95,"entities":{"symbol_text":"Nordea"}}')
    assert ok.entities == {"symbol_text": "Nordea"}
    with pytest.raises(msgspec.ValidationError, match="ticker"):
        decode_intent_output(b'{"primary_domain":"f","goal":"G","confidence":0.9,"ticker":"NDA-SE.ST"}')
    with pytest.raises(msgspec.ValidationError, match="confidence"):
        decode_intent_output(b'{"primary_domain":"f","goal":"G","confidence":1.5}')
    with pytest.raises(msgspec.ValidationError, match="confidence"):
        decode_intent_output(b'{"primary_domain":"f","goal":"G","confidence":"high"}')
    with pytest.raises(msgspec.DecodeError):
        decode_intent_output(b"{not json")


def test_planner_metadata_is_typed_and_checked() -> None:
    meta = CapabilityMetadata(
        id="finance.get_stock_price",
        intent_hints={"keywords": ["preço"], "examples": ["qual o preço da PETR4?"]},
        flow={"pre": [{"type": "resolve_symbol", "param": "symbol", "search_capability": "search_symbol"}], "modes": ["read"]},
    )
    assert check_metadata(meta) == []
    assert intent_hints(meta).keywords == ["preço"]
    assert flow_pre(meta)[0].search_capability == "search_symbol"
    bad = CapabilityMetadata(id="x.y", intent_hints={"keyword": ["typo"]}, flow={"pre": [{"type": "resolve_symbol"}]})
    paths = [p.path for p in check_metadata(bad)]
    assert paths == ["capabilities[x.y].intent_hints", "capabilities[x.y].flow.pre"]


def test_a_session_id_ending_in_a_newline_is_refused() -> None:
    """``$`` would match before a final newline: the rule is anchored with ``\\Z``."""
    from ontoflow.protocols.intent import SESSION_ID

    assert SESSION_ID.match("chat-1") and not SESSION_ID.match("chat-1\n")
