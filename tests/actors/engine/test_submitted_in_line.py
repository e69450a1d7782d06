"""A run's submission takes its first block's turn in line (``_advance._on_submitted``, no
``drive`` call when the capability requires nothing): it must leave exactly the state and
commands ``drive`` leaves, whether the step goes out, ends at once (a missing input) or has a
prerequisite to run first."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from ontoflow.actors.orchestrator.engine import RunState, RunSubmitted, advance, new_run
from ontoflow.actors.orchestrator.engine._steps import drive
from tests.actors.engine.helpers import block, cap, compile_nodes, node, schema

_CAPS = [cap("x.a", input_schema=schema("k.in", required=("k.in",))), cap("x.b"),
         cap("x.c", requires=["x.b"])]


@pytest.mark.parametrize(("entry", "inputs"), [
    ("a", {"k.in": "v"}),  # dispatched
    ("a", {}),  # its required input is missing: ends at once, routed on to b
    ("c", {}),  # its prerequisite goes first
    ("b", {"k.in": "v"}),  # nothing to route to after it: dispatched, the run waits
])
def test_the_in_line_turn_leaves_what_drive_leaves(entry: str, inputs: dict[str, Any]) -> None:
    workflow = compile_nodes({"main": node(entry, {
        "a": block("x.a", ("success", "JUMP:b"), ("invalid", "JUMP:b")),
        "b": block("x.b"),
        "c": block("x.c", ("success", "JUMP:b")),
    })}, _CAPS)
    in_line, general = new_run(workflow, "r1"), new_run(workflow, "r1")
    fact = RunSubmitted("r1", dict(inputs), 1_000)

    got = advance(workflow, in_line, fact)
    general.started_ms, general.context, general.node, general.block = 1_000, dict(inputs), "main", entry
    expected: list[Any] = []
    drive(workflow, general, 1_000, expected)

    assert got == expected and got
    assert msgspec.msgpack.encode(in_line) == msgspec.msgpack.encode(general)
    assert isinstance(in_line, RunState)
