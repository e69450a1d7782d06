"""A pinned source keeps the manifest's block order: a CALL returns to the block declared
after it, so a run compiled again from the journal (recovery, replay) must see that order."""

from __future__ import annotations

from ontoflow.actors.orchestrator import compile_document, compile_source, decode_source, encode_source
from ontoflow.protocols import CapabilityMetadata

CATALOG = {"t.cap": CapabilityMetadata(id="t.cap")}
DOCUMENT = {
    "start": "main",
    "nodes": {
        "main": {"entry_block": "zeta", "blocks": {
            "zeta": {"worker": "t.cap", "transitions": [{"on_signal": "success", "action": "CALL:sub"}]},
            "after": {"worker": "t.cap"},
        }},
        "sub": {"entry_block": "only", "blocks": {
            "only": {"worker": "t.cap", "transitions": [{"on_signal": "success", "action": "RETURN"}]}}},
    },
}


def test_the_pinned_manifest_keeps_its_block_order_and_its_call_return_address() -> None:
    compiled = compile_document(DOCUMENT, CATALOG)
    digest, body = encode_source(DOCUMENT, compiled)
    assert list(decode_source(body).manifest["nodes"]["main"]["blocks"]) == ["zeta", "after"]
    again = compile_source(body)
    assert again.nodes["main"].blocks["zeta"].next_block == "after"
    assert encode_source(DOCUMENT, compiled) == (digest, body)  # the same document, the same bytes


def test_a_run_journaled_before_the_id_rule_compiles_again_and_a_new_submit_is_held_to_it() -> None:
    # A node id like 'fetch.data' was accepted before workflow ids followed the plan step id
    # rule: a run journaled then must still be recovered and replayed (found in review), while a
    # document submitted now is refused naming the id.
    import pytest

    from ontoflow.protocols.errors import ManifestError

    old = {"start": "fetch.data", "nodes": {"fetch.data": {"entry_block": "b", "blocks": {"b": {"worker": "t.cap"}}}}}
    journaled = compile_document(old, CATALOG, recorded=True)
    _, body = encode_source(old, journaled)
    assert list(compile_source(body).nodes) == ["fetch.data"]
    with pytest.raises(ManifestError, match=r"id 'fetch.data' must be 1-128 letters"):
        compile_document(old, CATALOG)


def test_a_submitted_plan_resolves_its_named_connections_as_a_pipeline_does() -> None:
    # plans12: `plan run --connections` resolved them, the daemon passed '@shop' on as text.
    import pytest

    from ontoflow.actors.pipelines import ConnectionResolutionError

    catalog = {"t.db": CapabilityMetadata(id="t.db", input_schema={"properties": {"data.connection": {}}})}
    plan = {"steps": [{"id": "a", "capability": "t.db", "params": {"data.connection": "@shop"}}]}
    compiled = compile_document(plan, catalog, connections={"shop": {"path": "/srv/shop.db"}})
    assert compiled.plan.steps[0].params["data.connection"] == {"path": "/srv/shop.db"}
    with pytest.raises(ConnectionResolutionError, match="shop"):
        compile_document(plan, catalog, connections={})
