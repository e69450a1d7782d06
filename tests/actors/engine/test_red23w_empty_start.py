"""An empty start node (``--start "$NODE"`` with NODE unset) is refused, not read as "none given"."""

from __future__ import annotations

from typing import Any

import pytest

from ontoflow.protocols import ManifestError, manifest_from_data


def _doc(**top: Any) -> dict[str, Any]:
    return {**top, "nodes": {"main": {"entry_block": "a", "blocks": {"a": {"worker": "x.a"}}}}}


def test_an_empty_start_flag_is_refused_even_for_a_single_node() -> None:
    with pytest.raises(ManifestError) as caught:
        manifest_from_data(_doc(start="main"), start="")
    assert [(p.path, p.message) for p in caught.value.problems] == [("--start", "must name a node (it is empty)")]


def test_an_empty_start_in_the_document_is_refused() -> None:
    with pytest.raises(ManifestError) as caught:
        manifest_from_data(_doc(start=""))
    assert [p.path for p in caught.value.problems] == ["start"]


def test_no_start_at_all_still_starts_the_only_node() -> None:
    assert manifest_from_data(_doc()).start == "main"
    assert manifest_from_data(_doc(), start=None).start == "main"


def test_a_journaled_document_with_an_empty_start_is_compiled_again_as_it_ran() -> None:
    assert manifest_from_data(_doc(start=""), recorded=True).start == "main"


def test_a_null_start_is_refused_as_it_was_before_the_empty_one_was() -> None:
    # `start:` with no value (envsubst of an unset $NODE in YAML) is null: it ran the only
    # node once "" was told from absent with None (review23a).
    document = {"nodes": {"a": {"entry_block": "b", "blocks": {"b": {"worker": "t.w", "transitions": []}}}}}
    manifest_from_data(document)
    with pytest.raises(ManifestError, match="start"):
        manifest_from_data({**document, "start": None})
