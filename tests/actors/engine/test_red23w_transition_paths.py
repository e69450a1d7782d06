"""A capability problem's path counts every transition of its block, the broken ones too."""

from __future__ import annotations

import pytest

from ontoflow.protocols import CapabilityMetadata, ManifestError, manifest_from_data
from ontoflow.protocols.manifest import manifest_problems

CATALOG = {"x.a": CapabilityMetadata(id="x.a", events=["success", "empty"])}
DOC = {"start": "main", "nodes": {"main": {"entry_block": "a", "blocks": {"a": {"worker": "x.a", "transitions": [
    {"on_signal": "success", "action": "JUMP:nope"},
    {"on_signal": "sucess", "action": "RETURN"},
]}}}}}


def test_a_typo_in_a_signal_after_a_broken_action_is_reported_at_its_own_index() -> None:
    with pytest.raises(ManifestError) as caught:
        manifest_from_data(DOC, catalog=CATALOG)
    assert [p.path for p in caught.value.problems] == [
        "nodes.main.blocks.a.transitions[0].action",
        "nodes.main.blocks.a.transitions[1].on_signal",
    ]


def test_the_manifest_kept_for_the_checker_still_drops_what_cannot_be_followed() -> None:
    manifest, problems = manifest_problems(DOC, catalog=CATALOG)
    assert manifest is not None and len(problems) == 2
    assert [t.on_signal for t in manifest.nodes["main"].blocks["a"].transitions] == ["sucess"]
