"""The inherited layer, kept per call chain: the same memory (values and key order) as the walk
merging every node's memory on every step, at a cost that no longer grows with the depth."""

from __future__ import annotations

import random
from typing import Any

from ontoflow.actors.orchestrator.engine import CompiledWorkflow, Frame
from ontoflow.actors.orchestrator.engine._memory import MemoryCache
from ontoflow.actors.orchestrator.engine._steps import inherited_memory
from tests.actors.engine.helpers import Driver, block, cap, compile_nodes, node


def _walk(workflow: CompiledWorkflow, node_id: str, stack: list[Frame]) -> dict[str, Any]:
    """Seed 002's walk, written plainly: up the stack while the node just consulted inherits."""
    chain = [workflow.nodes[node_id]]
    for frame in reversed(stack):
        if not chain[-1].context_inheritance:
            break
        chain.append(workflow.nodes[frame.node])
    merged: dict[str, Any] = {}
    for plan in reversed(chain):
        merged.update(plan.static_memory)
    return merged


def test_kept_memories_equal_the_plain_walk_in_values_and_order() -> None:
    rng = random.Random(2)
    names = [f"n{i}" for i in range(6)]
    nodes = {name: node("a", {"a": block("x.a")}, context_inheritance=rng.random() < 0.7,
                        static_memory={f"k.{rng.randrange(8)}": f"{name}-{j}" for j in range(rng.randrange(4))})
             for name in names}
    workflow = compile_nodes(nodes, [cap("x.a")], start="n0")
    for _ in range(3_000):
        stack = [Frame(rng.choice(names), "a") for _ in range(rng.randrange(12))]
        here = rng.choice(names)
        got = inherited_memory(workflow, workflow.nodes[here], stack)
        want = _walk(workflow, here, stack)
        assert list(got.items()) == list(want.items()), (here, stack)


def test_a_deep_recursion_merges_once_per_chain_not_once_per_step() -> None:
    memory = {f"k.{i}": i for i in range(50)}
    wf = compile_nodes({"main": node("a", {"a": block("x.a", ("success", "CALL:main"), ("done", "JUMP:a"))},
                                     static_memory=memory)}, [cap("x.a", events=["success", "done"])])
    run = Driver(wf)
    run.submit()
    for _ in range(200):
        run.finish("success")
    kept = len(wf.memories)
    for _ in range(100):  # steps at the same depth: nothing merged again
        sent = run.pending
        assert sent.context.inherited == memory
        run.finish("done")
    assert len(wf.memories) == kept == 200


def test_the_cache_starts_again_past_its_budget() -> None:
    cache = MemoryCache(budget=5)
    cache.put(("a",), {"k": 1, "l": 2, "m": 3})
    cache.put(("b",), {"k": 1, "l": 2})
    assert len(cache) == 2
    cache.put(("c",), {"k": 1})  # 6 keys > 5: everything before is dropped
    assert (cache.get(("a",)), cache.get(("c",)), len(cache)) == (None, {"k": 1}, 1)
