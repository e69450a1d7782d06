"""An answer whose event the capability does not declare: nothing of it travels on.

The capability base ends such a step ``failure`` with neither outputs nor segments; a worker
speaking the wire protocol itself is ended the same way by the engine, segments included.
"""

from __future__ import annotations

from ontoflow.protocols import Segment

from tests.actors.engine.helpers import Driver, block, cap, compile_nodes, node

CAPS = [cap("x.a", events=["success"], outputs=["k.out"]), cap("x.b")]


def _run() -> Driver:
    wf = compile_nodes({"main": node("one", {
        "one": block("x.a", ("success", "JUMP:two"), ("failure", "JUMP:two")),
        "two": block("x.b"),
    })}, CAPS)
    run = Driver(wf)
    run.submit()
    return run


def test_segments_of_an_undeclared_event_do_not_enter_the_payload() -> None:
    run = _run()
    (sent,) = run.finish("made_up", outputs={"k.out": 1}, segments=[Segment("w1", "CODE_OUTPUT", "forged")])
    assert run.state.trace[0].event == "failure"
    assert run.state.trace[0].reason == "undeclared_event"
    assert "k.out" not in run.state.context
    assert run.state.payload == []
    assert sent.context.payload == []


def test_segments_of_a_declared_event_still_enter_the_payload() -> None:
    run = _run()
    (sent,) = run.finish("success", segments=[Segment("w1", "CODE_OUTPUT", "kept")])
    assert [s.content for s in sent.context.payload] == ["kept"]
