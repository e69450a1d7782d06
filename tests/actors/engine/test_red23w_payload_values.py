"""``memory:K`` and ``context:K`` segments of values JSON has no key for (a YAML map with a
``null`` or ``true`` key, a worker's output with such keys): shown, not an engine failure."""

from __future__ import annotations

from ontoflow.protocols import Segment

from tests.actors.engine.helpers import Driver, block, cap, compile_nodes, node, schema

CAPS = [cap("x.a", outputs=["k.out"]), cap("x.b", input_schema=schema())]


def _contents(run: Driver) -> list[tuple[str, str]]:
    return [(s.type, s.content) for s in run.pending.context.payload]


def test_a_static_memory_map_with_null_and_boolean_keys_becomes_a_segment() -> None:
    wf = compile_nodes({"main": node("a", {"a": block("x.b", payload_merge_strategy=["memory:k.map"])},
                                     static_memory={"k.map": {None: 1, True: [{False: "x"}], "s": 2, 3: 4}})}, CAPS)
    run = Driver(wf)
    run.submit()
    assert _contents(run) == [("STATIC_MEMORY", '{"null":1,"true":[{"false":"x"}],"s":2,"3":4}')]


def test_a_context_value_with_a_list_key_becomes_a_segment() -> None:
    wf = compile_nodes({"main": node("a", {
        "a": block("x.a", ("success", "JUMP:b")),
        "b": block("x.b", payload_merge_strategy=["context:k.out", "all"]),
    })}, CAPS)
    run = Driver(wf)
    run.submit()
    run.finish(outputs={"k.out": {(1, "a"): None}}, segments=[Segment("w", "NOTE", "n")])
    assert run.state.status == "running"
    assert _contents(run) == [("CONTEXT", '{"[1,\\"a\\"]":null}'), ("NOTE", "n")]


def test_plain_values_are_unchanged() -> None:
    wf = compile_nodes({"main": node("a", {"a": block("x.b", payload_merge_strategy=["memory:k.n", "memory:k.s"])},
                                     static_memory={"k.n": {"a": [1, 2.5, None]}, "k.s": "text"})}, CAPS)
    run = Driver(wf)
    run.submit()
    assert _contents(run) == [("STATIC_MEMORY", '{"a":[1,2.5,null]}'), ("STATIC_MEMORY", "text")]
