"""What a block's params and its node's memory fix for a step's inputs is looked up once, at
compile (``BlockPlan.inputs``); a step of a node not called asks the run's context for the rest,
and any key the context lacks takes the whole walk: the same inputs, in the same order, as
``resolve_inputs`` gives."""

from __future__ import annotations

from ontoflow.actors.orchestrator.engine import resolve_inputs

from tests.actors.engine.helpers import Driver, block, cap, compile_nodes, node, schema


def _workflow():
    keys = ("k.p", "k.m", "k.c", "k.d", "k.s", "k.none")
    worker = cap("x.a", input_schema=schema(*keys, defaults={"k.s": "schema"}))
    nodes = {"main": node(
        "a",
        {"a": block("x.a", ("success", "JUMP:b"), params={"k.p": "params"}), "b": block("x.a")},
        static_memory={"k.p": "memory", "k.m": "memory"},
    )}
    return compile_nodes(nodes, [worker], defaults={"k.d": "defaults"})


def test_the_compiled_block_holds_what_its_params_and_memory_fix() -> None:
    plan = _workflow().nodes["main"].blocks["a"]
    fixed = {key: value for key, value in plan.inputs if isinstance(value, str)}
    assert [key for key, _ in plan.inputs] == ["k.p", "k.m", "k.c", "k.d", "k.s", "k.none"]
    assert fixed == {"k.p": "params", "k.m": "memory"}


def test_a_step_gets_the_inputs_of_the_whole_walk_in_its_order() -> None:
    workflow = _workflow()
    run = Driver(workflow)
    (sent,) = run.submit({"k.p": "context", "k.m": "context", "k.c": "context", "k.d": "context"})
    expected = {"k.p": "params", "k.m": "memory", "k.c": "context", "k.d": "context", "k.s": "schema"}
    assert list(sent.inputs.items()) == list(expected.items())
    (after,) = [c for c in run.finish() if hasattr(c, "inputs")]
    block = workflow.nodes["main"].blocks["b"]
    walked, missing = resolve_inputs(block.capability, block.params, workflow.nodes["main"].static_memory,
                                     run.state.context, workflow.defaults)
    assert missing is None and list(after.inputs.items()) == list(walked.items())


def test_a_key_the_context_lacks_takes_the_defaults_then_the_schema_default() -> None:
    (sent,) = Driver(_workflow()).submit({"k.c": 1})
    assert sent.inputs == {"k.p": "params", "k.m": "memory", "k.c": 1, "k.d": "defaults", "k.s": "schema"}
