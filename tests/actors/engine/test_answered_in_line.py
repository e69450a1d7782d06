"""The usual outcome is handled in line (``_advance._on_finished``, no ``StepEnd`` made): it must
leave exactly the state and commands the general path (``outcome_end`` then ``finish_block_step``)
leaves, whatever the event, outputs and segments."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from ontoflow.protocols import Outcome, Segment

from ontoflow.actors.orchestrator.engine import RunState, StepFinished, advance
from ontoflow.actors.orchestrator.engine._advance import _answered_otherwise
from tests.actors.engine.helpers import Driver, block, cap, compile_nodes, node

_CAPS = [cap("x.a", outputs=["k.kept"], events=["success", "done"]), cap("x.b")]
_NODES = {
    "main": node("first", {
        "first": block("x.a", ("success", "JUMP:second"), ("failure", "JUMP:second"), ("done", "RETURN")),
        "second": block("x.b"),
    }),
}


@pytest.mark.parametrize(("event", "fields"), [
    ("success", {}),
    ("x.a.success", {"outputs": {"k.kept": 1, "k.other": [2]}}),
    ("done", {"segments": [Segment("a", "TEXT", "one"), Segment("b", "CODE", "two")]}),
    ("failure", {"reason": "error", "error": "it broke", "retries": 2, "duration_ms": 1.5}),
    ("timeout", {}),  # reserved, no route: the run fails
])
def test_the_in_line_path_leaves_what_the_general_path_leaves(event: str, fields: dict[str, Any]) -> None:
    workflow = compile_nodes(_NODES, _CAPS)
    run = Driver(workflow)
    run.submit({"k.in": "v"})
    d = run.pending
    fact = StepFinished(Outcome(run_id=d.run_id, step_id=d.step_id, attempt=d.attempt, event=event, **fields), 2_000)
    snapshot = msgspec.msgpack.encode(run.state)
    in_line, general = (msgspec.msgpack.decode(snapshot, type=RunState) for _ in range(2))

    got = advance(workflow, in_line, fact)
    assert general.pending is not None
    expected: list[Any] = []
    _answered_otherwise(workflow, general, fact, general.pending, workflow.capabilities["x.a"], expected)

    assert got == expected
    assert msgspec.msgpack.encode(in_line) == msgspec.msgpack.encode(general)
    assert in_line.trace[-1].event == event.removeprefix("x.a.")
