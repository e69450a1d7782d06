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


class _Needy(Capability):
    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="t.needy", events=["success", "failure"],
        input_schema={"type": "object", "properties": {"k.y": {"type": "string"}}, "required": ["k.y"]},
        outputs=["k.needy"])

    async def execute(self, inputs: dict[str, Any], context: Any) -> Result:
        return Result(outputs={"k.needy": inputs["k.y"]})


class _User(Capability):
    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="t.user", events=["success", "failure"], requires=["t.needy"], outputs=["k.user"])

    async def execute(self, inputs: dict[str, Any], context: Any) -> Result:
        return Result(outputs={"k.user": True})


def test_a_prerequisite_run_without_its_key_does_not_name_the_params_as_a_place_looked_at() -> None:
    # The key is in the block's params, which only t.user reads: t.needy ends `invalid`, and its
    # error listed "block params" among the places searched, where the key plainly was.
    doc = {"start": "main", "nodes": {"main": node("a", {"a": block(
        "t.user", ("prerequisite_failed", "JUMP:b"), params={"k.y": "v"}), "b": block("t.needy")})}}
    result = run_manifest(doc, [_Needy, _User], inputs={})
    first = result.trace[0]
    assert (first.capability, first.event, first.prerequisite_of) == ("t.needy", "invalid", "t.user")
    assert "'k.y' resolved to nothing" in (first.error or "")
    assert "block params" not in (first.error or "")
    assert result.trace[1].event == "prerequisite_failed"
    # Its own block reads its params: there the key is found, and the list names them when missing.
    last = result.trace[-1]
    assert (last.block, last.capability, last.event) == ("b", "t.needy", "invalid")
    assert "block params" in (last.error or "")


class _Writer(Capability):
    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(id="t.writer", events=["success"], outputs=["k.y"])

    async def execute(self, inputs: dict[str, Any], context: Any) -> Result:
        return Result(outputs={"k.y": "written"})


def test_the_last_value_written_wins_over_a_submitted_input_as_the_readme_says() -> None:
    # README, context bus: a later output replaces a submitted input of the same key, and the
    # next reader (here a prerequisite run for t.user) sees the output.
    doc = {"start": "main", "nodes": {"main": node("w", {
        "w": block("t.writer", ("success", "JUMP:u")), "u": block("t.user")})}}
    result = run_manifest(doc, [_Writer, _Needy, _User], inputs={"k.y": "submitted"})
    assert result.status == "completed"
    assert result.context["k.y"] == "written"
    assert result.context["k.needy"] == "written"
