"""Transitions: JUMP, CALL/RETURN, the FAIL_DEFAULT fallback and how a run ends."""

from __future__ import annotations

from ontoflow.actors.orchestrator.engine import Frame, RunEnded
from ontoflow.actors.orchestrator.engine._steps import MAX_ENDED_AT_ONCE
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
    wf = compile_nodes({"main": node("a", {"a": block("x.needy", ("invalid", "JUMP:a"))})}, [needy], max_steps=500)
    run = Driver(wf)
    (ended,) = run.submit()
    assert ended == RunEnded("r1", "failed", "step limit of 500 steps exceeded in block 'a' of node 'main'")
    assert len(run.state.trace) == 500


def test_a_loop_of_steps_that_end_without_a_worker_fails_after_a_thousand_in_a_row() -> None:
    # Up to the default step limit (100,000) such a loop held a daemon's loop 3 s in one fact's
    # turn and left a 42 MB trace; far more steps than the interpreter's recursion limit, too.
    needy = cap("x.needy", input_schema={"type": "object", "properties": {"k": {}}, "required": ["k"]})
    nodes = {"main": node("a", {"a": block("x.needy", ("invalid", "JUMP:b")),
                                "b": block("x.needy", ("invalid", "CALL:sub")),
                                "back": block("x.needy", ("invalid", "JUMP:a"))}),
             "sub": node("c", {"c": block("x.needy", ("invalid", "RETURN"))})}
    run = Driver(compile_nodes(nodes, [needy]))
    (ended,) = run.submit()
    assert ended == RunEnded("r1", "failed", f"{MAX_ENDED_AT_ONCE:,} steps in a row ended without a worker, the "
                             "last in block 'back' of node 'main' with 'invalid': a loop of transitions that runs no step")
    assert len(run.state.trace) == MAX_ENDED_AT_ONCE == 1_000
    assert run.state.stack == []


def test_steps_that_end_without_a_worker_between_dispatched_ones_do_not_add_up() -> None:
    # The count is of steps in a row: a step that goes out to a worker starts it again.
    needy = cap("x.needy", input_schema={"type": "object", "properties": {"k": {}}, "required": ["k"]})
    nodes = {"main": node("a", {"a": block("x.a", ("success", "JUMP:n0")),
                                **{f"n{i}": block("x.needy", ("invalid", f"JUMP:n{i + 1}")) for i in range(900)},
                                "n900": block("x.a", ("success", "JUMP:n0"))})}
    run = Driver(compile_nodes(nodes, [needy, *CAPS]))
    run.submit()
    for _ in range(3):
        assert len(dispatches(run.finish())) == 1
    assert run.state.status == "running" and len(run.state.trace) == 3 + 3 * 900
