"""The return stack's depth cap: CALLs nest at most ``MAX_CALL_DEPTH`` deep.

Without a cap a recursive manifest grew the stack by one frame a step until the step limit, and
every step walked the whole stack for its inherited memory: 20,000 steps took 31 s of engine
time (quadratic), during which the orchestrator served nothing else.
"""

from __future__ import annotations

import pytest

from ontoflow.protocols.manifest import MAX_CALL_DEPTH

from ontoflow.actors.orchestrator.engine import Frame, RunEnded
from tests.actors.engine.helpers import Driver, block, cap, compile_nodes, dispatches, node

CAPS = [cap("x.a", events=["success", "done"])]


def _recursive(**options: object) -> Driver:
    # rec CALLs itself on success and RETURNs on done: a countdown's shape.
    nodes = {"rec": node("d", {
        "d": block("x.a", ("success", "CALL:rec"), ("done", "RETURN")),
        "after": block("x.a", ("success", "RETURN")),
    }, static_memory={"k.m": 1})}
    run = Driver(compile_nodes(nodes, CAPS, start="rec", **options))
    run.submit()
    return run


def test_calls_nest_up_to_the_cap_and_unwind_to_completion() -> None:
    run = _recursive(max_call_depth=3)
    for _ in range(3):
        assert len(dispatches(run.finish("success"))) == 1
    assert run.state.stack == [Frame("rec", "after")] * 3
    run.finish("done")  # the innermost RETURNs to its caller's `after`, and so on up
    for _ in range(3):
        run.finish("success")
    assert run.state.status == "completed"
    assert run.state.stack == []


def test_a_call_past_the_cap_fails_the_run_naming_block_node_and_limit() -> None:
    run = _recursive(max_call_depth=3)
    for _ in range(3):
        run.finish("success")
    (ended,) = run.finish("success")
    assert isinstance(ended, RunEnded) and ended.status == "failed"
    assert ended.error == ("CALL:rec in block 'd' of node 'rec' would nest calls 4 deep; "
                           "the return stack holds at most 3")
    assert len(run.state.stack) == 3  # nothing pushed
    assert run.state.trace[-1].action == "CALL:rec"
    assert run.state.pending is None


def test_the_default_cap_is_the_checkers_and_holds_for_a_real_recursion() -> None:
    run = _recursive()
    assert run.workflow.max_call_depth == MAX_CALL_DEPTH == 1_000
    for _ in range(MAX_CALL_DEPTH):
        run.finish("success")
    assert len(run.state.stack) == MAX_CALL_DEPTH
    (ended,) = run.finish("success")
    assert ended.status == "failed" and "at most 1000" in ended.error
    assert run.state.steps_taken == MAX_CALL_DEPTH + 1  # ended at the cap, not at the step limit


def test_max_call_depth_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_call_depth"):
        compile_nodes({"main": node("a", {"a": block("x.a")})}, CAPS, max_call_depth=0)
