"""Domains served from elsewhere: declared metadata, an HTTP service's manifest, and the
``Ready.domains`` field staying compatible with peers that do not know it."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.domain import DOMAIN_OUTPUT_KEY, domain_from_data
from ontoflow.protocols.domain_service import declared_metadata, http_manifest
from ontoflow.protocols.errors import ManifestError
from ontoflow.protocols.messages import PROTOCOL_VERSION, Message, Ready

MOVERS: dict[str, Any] = {
    "domain": "finance",
    "capabilities": ["finance.get_top_gainers", "finance.get_top_losers", "finance.get_stock_price"],
    "goals": [
        {"id": "TOP_MOVERS", "entities_schema": {
            "direction": {"type": "enum", "values": ["GAINERS", "LOSERS"], "default": "GAINERS",
                          "capability_map": {"GAINERS": "finance.get_top_gainers", "LOSERS": "finance.get_top_losers"}},
            "market_text": {"type": "string", "param": "finance.market_text"}}},
        {"id": "GET_QUOTE", "capability": "finance.get_stock_price",
         "entities_schema": {"symbol_text": {"type": "string", "param": "finance.symbol_text"}}},
    ],
}


def test_declared_metadata_takes_what_the_goals_pass_and_writes_a_domain_output() -> None:
    declared = declared_metadata(domain_from_data(MOVERS))
    assert sorted(declared) == sorted(MOVERS["capabilities"])
    assert declared["finance.get_top_losers"].input_keys == ["direction", "finance.market_text"]
    assert declared["finance.get_stock_price"].input_keys == ["finance.symbol_text"]
    assert all(m.outputs == [DOMAIN_OUTPUT_KEY] for m in declared.values())


def test_an_http_manifest_takes_ids_and_the_seeds_metadata_contract() -> None:
    data = {**MOVERS, "capabilities": [
        "finance.get_top_gainers",
        {"id": "finance.get_top_losers", "timeout_ms": 2000},
        {"capability": "finance.get_stock_price", "metadata": {"intent_hints": {"keywords": ["preço"]}}},
    ]}
    manifest, metadata = http_manifest(data, source="http://svc/manifest")
    assert manifest.capabilities == MOVERS["capabilities"]
    assert metadata["finance.get_top_losers"].timeout_ms == 2000
    assert metadata["finance.get_stock_price"].intent_hints == {"keywords": ["preço"]}
    assert metadata["finance.get_top_gainers"].input_keys == ["direction", "finance.market_text"]  # declared


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ([], "expected a map at the top level"),
        ({**MOVERS, "capabilities": "finance.x"}, "capabilities: expected a list"),
        ({**MOVERS, "capabilities": [3]}, "capabilities[0]: expected a capability id or a map, got int"),
        ({**MOVERS, "capabilities": [{"capability": "finance.x", "meta": {}}]}, "unknown keys ['meta']"),
        ({**MOVERS, "capabilities": [{"id": "finance.x", "timeout_ms": "soon"}]}, "capabilities[0]: Expected `int | null`"),
        ({**MOVERS, "capabilities": [{"id": "not an id"}]}, "must be a dotted identifier"),
        ({**MOVERS, "capabilities": ["finance.get_top_gainers"]}, "not in the domain's capabilities"),
    ],
)
def test_a_bad_http_manifest_is_refused_with_the_path(data: Any, words: str) -> None:
    with pytest.raises(ManifestError) as caught:
        http_manifest(data, source="http://svc/manifest")
    assert words in str(caught.value) and "http://svc/manifest" in str(caught.value)


class _OldReady(Message, tag="ready", frozen=True, kw_only=True):
    """``Ready`` as a peer without ``domains`` knows it (protocol 3, before this field)."""

    protocol: int
    worker_id: str
    host: str = ""
    pid: int = 0
    capabilities: list[CapabilityMetadata] = []
    slots: int = 1
    holding: list[tuple[str, str, int]] = []
    session: str = ""


def test_ready_domains_is_a_trailing_field_old_and_new_peers_read() -> None:
    new = Ready(protocol=PROTOCOL_VERSION, worker_id="w", domains=[MOVERS])
    old = msgspec.msgpack.decode(msgspec.msgpack.encode(new), type=_OldReady)
    assert old.worker_id == "w"
    back = msgspec.msgpack.decode(msgspec.msgpack.encode(_OldReady(protocol=PROTOCOL_VERSION, worker_id="w")), type=Ready)
    assert back.domains == []
    assert msgspec.msgpack.decode(msgspec.msgpack.encode(new), type=Ready).domains == [MOVERS]
