"""Determinism: replaying the journal of facts rebuilds the same state, byte for byte."""

from __future__ import annotations

import msgspec

from ontoflow.protocols import Segment

from ontoflow.actors.orchestrator.engine import Fact, RunState, StepLost, advance, new_run
from tests.actors.engine.helpers import Driver, block, cap, compile_nodes, node, schema


def _busy_run() -> Driver:
    caps = [
        cap("x.load", requires=["x.auth"], outputs=["k.rows"], idempotent=True),
        cap("x.auth", outputs=["k.token"]),
        cap("x.sum", input_schema=schema("k.rows", "k.mode", required=("k.rows",)), outputs=["k.total"]),
    ]
    nodes = {
        "main": node("load", {
            "load": block("x.load", ("success", "CALL:calc")),
            "done": block("x.sum", payload_merge_strategy=["text:sum", "all"]),
        }, static_memory={"k.mode": "fast"}),
        "calc": node("s", {"s": block("x.sum", ("success", "RETURN"))}),
    }
    run = Driver(compile_nodes(nodes, caps))
    run.submit({"k.user": "u"})
    run.finish(outputs={"k.token": "t"})
    run.feed(StepLost("s2", 1, "interrupted", run.now))
    run.finish(outputs={"k.rows": [1, 2]}, segments=[Segment("x", "CODE", "rows")])
    run.finish(outputs={"k.total": 3})
    run.finish()
    assert run.state.status == "completed"
    return run


def test_replaying_the_facts_on_a_fresh_state_gives_an_equal_state() -> None:
    run = _busy_run()
    decoded = msgspec.msgpack.decode(msgspec.msgpack.encode(run.facts), type=list[Fact])
    assert decoded == run.facts  # the journal round-trips
    fresh = new_run(run.workflow, "r1")
    for fact in decoded:
        advance(run.workflow, fresh, fact)
    assert msgspec.msgpack.encode(fresh) == msgspec.msgpack.encode(run.state)


def test_a_snapshot_restores_mid_run_and_continues_identically() -> None:
    run = _busy_run()
    half = len(run.facts) // 2
    first = new_run(run.workflow, "r1")
    for fact in run.facts[:half]:
        advance(run.workflow, first, fact)
    restored = msgspec.msgpack.decode(msgspec.msgpack.encode(first), type=RunState)
    assert restored == first
    for fact in run.facts[half:]:
        advance(run.workflow, restored, fact)
    assert msgspec.msgpack.encode(restored) == msgspec.msgpack.encode(run.state)


def test_the_same_facts_give_the_same_commands_on_a_workflow_compiled_anew() -> None:
    # What a recovering daemon does: compile the journaled document again, feed the facts again.
    run = _busy_run()
    original = new_run(run.workflow, "r1")
    first = [advance(run.workflow, original, fact) for fact in run.facts]
    again = compile_nodes({n: msgspec.to_builtins(p) for n, p in run.workflow.manifest.nodes.items()},
                          list(run.workflow.catalog.values()))
    fresh = new_run(again, "r1")
    second = [advance(again, fresh, fact) for fact in run.facts]
    assert msgspec.msgpack.encode(second) == msgspec.msgpack.encode(first)
    assert any(second)  # the commands are there to compare: dispatches, then the run's end
