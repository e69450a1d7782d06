"""Transitions: JUMP, CALL/RETURN, the FAIL_DEFAULT fallback and how a run ends."""

from __future__ import annotations

from ontoflow.actors.orchestrator.engine import Frame, RunEnded
from tests.actors.engine.helpers import Driver, block, cap, compile_nodes, dispatches, node

CAPS = [cap("x.a", events=["success", "failure", "empty"]), cap("x.b"), cap("x.c")]


def test_jump_updates_the_block_and_continues() -> None:
    wf = compile_nodes({"main": node("one", {
        "one": block("x.a", ("success", "JUMP:three")),
        "two": block("x.b"),
        "three": block("x.c"),
    })}, CAPS)
    run = Driver(wf)
    run.submit()
    assert (run.state.block, run.pending.capability) == ("one", "x.a")
    (sent,) = run.finish("success")
    assert run.state.block == "three"
    assert (sent.capability, sent.step_id, sent.context.system.block) == ("x.c", "s2", "three")
    assert run.state.stack == []
    assert run.state.trace[0].action == "JUMP:three"


def test_call_pushes_the_return_address_and_return_pops_back_to_the_next_block() -> None:
    wf = compile_nodes({
        "main": node("first", {
            "first": block("x.a", ("success", "CALL:sub")),
            "after": block("x.c"),
        }),
        "sub": node("inner", {"inner": block("x.b", ("success", "RETURN"))}),
    }, CAPS)
    run = Driver(wf)
    run.submit()
    run.finish("success")
    assert run.state.stack == [Frame("main", "after")]
    assert (run.state.node, run.state.block, run.pending.capability) == ("sub", "inner", "x.b")
    run.finish("success")
    assert run.state.stack == []
    assert (run.state.node, run.state.block, run.pending.capability) == ("main", "after", "x.c")
    cmds = run.finish("success")
    assert cmds == [RunEnded("r1", "completed", None)]
    assert [t.action for t in run.state.trace] == ["CALL:sub", "RETURN", None]


def test_a_call_from_the_last_block_returns_again_when_the_callee_returns() -> None:
    wf = compile_nodes({
        "main": node("m1", {"m1": block("x.a", ("success", "CALL:mid")), "m2": block("x.c")}),
        "mid": node("last", {"last": block("x.a", ("success", "CALL:leaf"))}),
        "leaf": node("l", {"l": block("x.b", ("success", "RETURN"))}),
    }, CAPS)
    run = Driver(wf)
    run.submit()
    run.finish()
    run.finish()
    assert run.state.stack == [Frame("main", "m2"), Frame("mid", None)]
    run.finish()
    # mid had nothing after its CALL: the implicit RETURN carries on to main's next block.
    assert (run.state.node, run.state.block) == ("main", "m2")
    assert run.state.stack == []


def test_return_on_an_empty_stack_completes_the_run() -> None:
    wf = compile_nodes({"main": node("a", {"a": block("x.a", ("failure", "RETURN"))})}, CAPS)
    run = Driver(wf)
    run.submit()
    assert run.finish("failure") == [RunEnded("r1", "completed", None)]
    assert run.state.status == "completed"


def test_an_unknown_signal_takes_fail_default() -> None:
    wf = compile_nodes({"main": node("a", {
        "a": block("x.a", ("success", "JUMP:ok"), ("SIGNAL:FAIL_DEFAULT", "JUMP:fallback")),
        "ok": block("x.b"),
        "fallback": block("x.c"),
    })}, CAPS)
    run = Driver(wf)
    run.submit()
    (sent,) = dispatches(run.finish("empty"))
    assert (run.state.block, sent.capability) == ("fallback", "x.c")
    assert run.state.trace[0].event == "empty"
    assert run.state.trace[0].action == "JUMP:fallback"


def test_no_match_and_no_fallback_fails_the_run_naming_block_and_signal() -> None:
    wf = compile_nodes({"main": node("a", {"a": block("x.a", ("success", "JUMP:b")), "b": block("x.b")})}, CAPS)
    run = Driver(wf)
    run.submit()
    (ended,) = run.finish("empty")
    assert isinstance(ended, RunEnded) and ended.status == "failed"
    assert ended.error == "no transition for signal 'empty' in block 'a' of node 'main' and no SIGNAL:FAIL_DEFAULT"
    assert run.state.error == ended.error
    assert run.state.trace[-1].action is None
    assert run.state.pending is None


def test_a_block_without_transitions_ends_the_run() -> None:
    wf = compile_nodes({"main": node("a", {"a": block("x.a")})}, CAPS)
    ok = Driver(wf)
    ok.submit()
    assert ok.finish("empty") == [RunEnded("r1", "completed", None)]
    bad = Driver(wf)
    bad.submit()
    (ended,) = bad.finish("failure")
    assert ended.status == "failed"
    assert "'a'" in ended.error and "'main'" in ended.error and "'failure'" in ended.error


def test_an_endless_jump_loop_stops_at_the_step_limit() -> None:
    wf = compile_nodes({"main": node("a", {"a": block("x.a", ("success", "JUMP:a"))})}, CAPS, max_steps=5)
    run = Driver(wf)
    run.submit()
    for _ in range(4):
        assert len(dispatches(run.finish())) == 1
    (ended,) = run.finish()
    assert isinstance(ended, RunEnded) and ended.status == "failed"
    assert "step limit of 5 steps exceeded" in ended.error
    assert run.state.steps_taken == 5


def test_an_endless_loop_of_undispatched_steps_stops_at_the_step_limit_too() -> None:
    # Every step ends `invalid` without a worker, inside one advance() call: no recursion.
    needy = cap("x.needy", input_schema={"type": "object", "properties": {"k": {}}, "required": ["k"]})
    wf = compile_nodes({"main": node("a", {"a": block("x.needy", ("invalid", "JUMP:a"))})}, [needy], max_steps=5000)
    run = Driver(wf)
    (ended,) = run.submit()  # far more steps than the interpreter's recursion limit
    assert ended == RunEnded("r1", "failed", "step limit of 5000 steps exceeded in block 'a' of node 'main'")
    assert len(run.state.trace) == 5000
