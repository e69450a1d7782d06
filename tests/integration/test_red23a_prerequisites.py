"""Seed 000's prerequisites (``required``) as a user meets them: the checker's words and the run."""

from __future__ import annotations

from typing import Any, ClassVar

from ontoflow import Capability, CapabilityMetadata, Result, run_manifest
from tests.actors.checker.helpers import block, check, kinds, meta, node

NEEDY = meta("t.needy", required=["k.y"])
USER = meta("t.user", requires=["t.needy"])


def test_a_prerequisite_missing_a_key_the_block_params_give_is_not_told_to_use_params() -> None:
    # The block's params feed its own worker only: the prerequisite never sees them. The
    # finding said "not in the block's params" of a key that is right there, so a user who
    # followed it was refused again with the same words.
    doc = {"start": "main", "nodes": {"main": node("a", {"a": block("t.user", params={"k.y": "v"})})}}
    [finding] = kinds(check(doc, NEEDY, USER))["missing-input"]
    assert "t.needy (a prerequisite of t.user)" in finding.message
    assert "not in the block's params" not in finding.message
    assert "a prerequisite does not see the block's params" in finding.message
    assert "static memory" in finding.message  # where to put it instead


def test_the_block_own_missing_key_still_names_the_params() -> None:
    doc = {"start": "main", "nodes": {"main": node("a", {"a": block("t.needy")})}}
    [finding] = kinds(check(doc, NEEDY))["missing-input"]
    assert "not in the block's params" in finding.message
