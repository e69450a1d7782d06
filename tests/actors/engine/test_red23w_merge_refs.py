"""A merge instruction naming a block or a static memory key the manifest does not have."""

from __future__ import annotations

from typing import Any

import pytest

from ontoflow.protocols import ManifestError, manifest_from_data
from ontoflow.protocols.manifest import manifest_problems


def _doc(*strategy: str) -> dict[str, Any]:
    return {"start": "main", "nodes": {
        "main": {"entry_block": "load", "static_memory": {"rule.style": "formal"}, "blocks": {
            "load": {"worker": "x.a", "transitions": [{"on_signal": "success", "action": "CALL:sub"}]},
            "review": {"worker": "x.b", "payload_merge_strategy": list(strategy)},
        }},
        "sub": {"entry_block": "write", "static_memory": {"sub.rule": 1}, "blocks": {
            "write": {"worker": "x.c", "transitions": [{"on_signal": "success", "action": "RETURN"}]}}},
    }}


def test_a_block_no_node_has_is_refused_with_its_path() -> None:
    with pytest.raises(ManifestError) as caught:
        manifest_from_data(_doc("all", "block:laod"))
    (problem,) = caught.value.problems
    assert problem.path == "nodes.main.blocks.review.payload_merge_strategy[1]"
    assert "no node has a block 'laod'" in problem.message


def test_a_memory_key_no_node_has_is_refused_with_its_path() -> None:
    _, problems = manifest_problems(_doc("memory:rule.stlye"))
    assert [p.path for p in problems] == ["nodes.main.blocks.review.payload_merge_strategy[0]"]
    assert "static_memory" in problems[0].message


def test_blocks_and_keys_of_any_node_are_accepted() -> None:
    manifest = manifest_from_data(_doc("block:load", "block:write", "memory:rule.style", "memory:sub.rule",
                                       "context:anything", "type:CODE", "text:be brief"))
    assert manifest.nodes["main"].blocks["review"].payload_merge_strategy[1] == "block:write"


def test_a_journaled_document_is_compiled_again_as_it_ran() -> None:
    manifest = manifest_from_data(_doc("block:laod"), recorded=True)
    assert manifest.nodes["main"].blocks["review"].payload_merge_strategy == ["block:laod"]


def test_a_block_with_a_problem_of_its_own_is_still_a_name_it_may_be_selected_by() -> None:
    doc = _doc("block:write", "memory:sub.rule")
    doc["nodes"]["sub"]["blocks"]["write"]["timeout"] = 5  # an unknown field: the block does not load
    _, problems = manifest_problems(doc)
    assert [p.path for p in problems] == ["nodes.sub.blocks.write.timeout"]
