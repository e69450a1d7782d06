"""A manifest's transitions are counted, like its blocks, before anything is checked."""

from __future__ import annotations

from typing import Any

import pytest

from ontoflow.protocols import CapabilityMetadata, ManifestError, manifest_from_data
from ontoflow.protocols.manifest import MAX_BLOCKS, MAX_TRANSITIONS
from ontoflow.protocols.manifest import manifest_problems

CATALOG = {"x.a": CapabilityMetadata(id="x.a")}


def _doc(blocks: int, per_block: int) -> dict[str, Any]:
    routes = [{"on_signal": "success", "action": "RETURN"}] * per_block
    return {"start": "m", "nodes": {"m": {"entry_block": "b0", "blocks": {
        f"b{i}": {"worker": "x.a", "transitions": routes} for i in range(blocks)}}}}


def test_a_million_transitions_are_one_problem_not_a_million() -> None:
    with pytest.raises(ManifestError) as caught:
        manifest_from_data(_doc(1, 1_000_000), catalog=CATALOG)
    (problem,) = caught.value.problems
    assert problem.path == "nodes"
    assert problem.message == f"1,000,000 transitions; a manifest has at most {MAX_TRANSITIONS:,}"


def test_the_most_transitions_are_checked_as_usual() -> None:
    per_block = MAX_TRANSITIONS // MAX_BLOCKS
    _, problems = manifest_problems(_doc(MAX_BLOCKS, per_block), catalog=CATALOG)
    # each repeat of a signal, at its path (the first thousand listed, the others counted)
    assert all("already routed" in p.message for p in problems[:-1])
    assert problems[-1].message == f"and {MAX_BLOCKS * (per_block - 1) - 1_000:,} more problems (the first 1,000 are listed)"


def test_a_transitions_value_that_is_not_a_list_is_reported_by_the_type_check() -> None:
    doc = _doc(1, 0)
    doc["nodes"]["m"]["blocks"]["b0"]["transitions"] = {"on_signal": "success"}
    _, problems = manifest_problems(doc)
    assert [p.path for p in problems] == ["nodes.m.blocks.b0.transitions"]


def test_half_a_million_problems_are_reported_as_the_first_thousand_and_a_count() -> None:
    doc = {"start": "m", "nodes": {"m": {"entry_block": "b0", "blocks": {
        f"b{i}": {"worker": "x.a", "payload_merge_strategy": ["x"] * 100} for i in range(MAX_BLOCKS)}}}}
    with pytest.raises(ManifestError) as caught:
        manifest_from_data(doc, catalog=CATALOG)
    problems = caught.value.problems
    assert len(problems) == 1_001
    assert problems[0].path == "nodes.m.blocks.b0.payload_merge_strategy[0]"
    assert problems[-1].message == "and 499,000 more problems (the first 1,000 are listed)"
