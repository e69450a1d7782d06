"""The payload_merge_strategy language: every instruction parses, and an unknown one is refused
with the forms it could have been (and never its own text)."""

from __future__ import annotations

import pytest

from ontoflow.protocols import ManifestError, manifest_from_data
from ontoflow.protocols.merge_strategy import MAX_INSTRUCTIONS, MergeInstruction, parse_merge_instruction


@pytest.mark.parametrize(("text", "parsed"), [
    ("all", MergeInstruction("all")),
    ("last:3", MergeInstruction("last", count=3)),
    ("type:CODE_OUTPUT", MergeInstruction("type", "CODE_OUTPUT")),
    ("block:load", MergeInstruction("block", "load")),
    ("memory:acme.rule", MergeInstruction("memory", "acme.rule")),
    ("context:acme.key", MergeInstruction("context", "acme.key")),
    ("text:Be brief: one line.", MergeInstruction("text", "Be brief: one line.")),
])
def test_each_instruction_parses(text: str, parsed: MergeInstruction) -> None:
    assert parse_merge_instruction(text) == parsed


@pytest.mark.parametrize("text", [
    "last:\u00b2",  # a superscript two: str.isdigit() says digit, int() refused it with its own message
    "last:\u0663",  # an Arabic-Indic three: int() read it as 3
    "last:" + "9" * 5000,  # int() refused it naming Python's digit limit and sys.set_int_max_str_digits
    "last:" + "9" * 19,
    "last:0",
    "last:-1",
    "last:",
])
def test_last_takes_a_plain_positive_count(text: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_merge_instruction(text)
    assert str(info.value) == "last:N needs a positive whole number N (ASCII digits, at most 18)"


@pytest.mark.parametrize("text", ["ALL", "all:", "first:2", "text:", "memory:", "", "secret-ish:hunter2"])
def test_an_unknown_instruction_is_refused_with_its_path_and_the_forms(text: str) -> None:
    data = {"nodes": {"m": {"entry_block": "a", "blocks": {"a": {"worker": "x.a", "payload_merge_strategy": ["all", text]}}}}}
    with pytest.raises(ManifestError) as info:
        manifest_from_data(data)
    ((problem),) = info.value.problems
    assert problem.path == "nodes.m.blocks.a.payload_merge_strategy[1]"
    assert problem.message.startswith("unknown merge instruction: expected all, last:N, type:T")
    assert "hunter2" not in str(info.value)


@pytest.mark.parametrize(("text", "message"), [
    ("type: CODE", "type:T takes its name with no space around it"),
    ("block:load ", "block:B takes its name with no space around it"),
    ("memory:\tk", "memory:K takes its name with no space around it"),
    ("context: k", "context:K takes its name with no space around it"),
])
def test_a_name_with_spaces_around_it_is_refused_rather_than_selecting_nothing(text: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_merge_instruction(text)
    assert str(info.value) == message
    assert parse_merge_instruction("text: keep my spaces ") == MergeInstruction("text", " keep my spaces ")


def test_a_strategy_has_at_most_max_instructions_refused_once_not_per_instruction() -> None:
    def doc(strategy: list[str]) -> dict:
        return {"nodes": {"m": {"entry_block": "a", "blocks": {"a": {"worker": "x.a", "payload_merge_strategy": strategy}}}}}

    manifest_from_data(doc(["all"] * MAX_INSTRUCTIONS))
    with pytest.raises(ManifestError) as info:
        manifest_from_data(doc(["bogus"] * 200_000))  # 200,000 problems, one per instruction, before
    ((problem),) = info.value.problems
    assert problem.path == "nodes.m.blocks.a.payload_merge_strategy"
    assert problem.message == f"200,000 instructions; a block has at most {MAX_INSTRUCTIONS}"
