"""A JUMP to another node's block: the hint says what a CALL there would run."""

from __future__ import annotations

from ontoflow.protocols.manifest import manifest_problems


def _problems(target: str) -> list[str]:
    _, problems = manifest_problems({"start": "main", "nodes": {
        "main": {"entry_block": "a", "blocks": {"a": {"worker": "x.a", "transitions": [
            {"on_signal": "success", "action": f"JUMP:{target}"}]}}},
        "sub": {"entry_block": "first", "blocks": {"first": {"worker": "x.b"}, "second": {"worker": "x.c"}}},
    }})
    return [p.message for p in problems]


def test_a_jump_to_another_nodes_entry_block_is_told_to_call_that_node() -> None:
    assert _problems("first") == ["JUMP to block 'first' that does not exist in node 'main' (it is in node 'sub': use CALL:sub)"]


def test_a_jump_to_another_nodes_later_block_is_not_told_that_a_call_runs_it() -> None:
    assert _problems("second") == [
        "JUMP to block 'second' that does not exist in node 'main' (it is in node 'sub', which a CALL:sub "
        "enters at its entry block 'first')"]
