"""The context bus and the five layers: inputs, inheritance boundaries, the payload."""

from __future__ import annotations

from ontoflow.protocols import BlockContract, Segment, SystemMetadata

from ontoflow.actors.orchestrator.engine import RunEnded
from tests.actors.engine.helpers import Driver, block, cap, compile_nodes, dispatches, node, schema


def test_a_node_without_inheritance_sees_none_of_its_callers_memory() -> None:
    caps = [cap("x.parent"), cap("x.child", input_schema=schema("rule.secret", "rule.own", "rule.shared"))]
    nodes = {
        "main": node(
            "p",
            {"p": block("x.parent", ("success", "CALL:sub"))},
            static_memory={"rule.secret": "parent", "rule.shared": "parent"},
        ),
        "sub": node(
            "c",
            {"c": block("x.child", ("success", "RETURN"))},
            context_inheritance=False,
            static_memory={"rule.own": "child"},
        ),
    }
    run = Driver(compile_nodes(nodes, caps))
    run.submit()
    (sent,) = dispatches(run.finish())
    assert sent.context.inherited == {"rule.own": "child"}
    assert sent.inputs == {"rule.own": "child"}

    # The same callee with inheritance on sees the caller's memory, its own winning a shared key.
    nodes["sub"] = node(
        "c", {"c": block("x.child", ("success", "RETURN"))}, static_memory={"rule.own": "child", "rule.shared": "child"}
    )
    run = Driver(compile_nodes(nodes, caps))
    run.submit()
    (sent,) = dispatches(run.finish())
    assert sent.context.inherited == {"rule.secret": "parent", "rule.shared": "child", "rule.own": "child"}
    assert sent.inputs == {"rule.secret": "parent", "rule.own": "child", "rule.shared": "child"}


def test_the_walk_stops_after_the_first_node_without_inheritance() -> None:
    caps = [cap("x.a"), cap("x.leaf", input_schema=schema("k.top", "k.mid", "k.leaf"))]
    nodes = {
        "main": node("a", {"a": block("x.a", ("success", "CALL:mid"))}, static_memory={"k.top": 1}),
        "mid": node("m", {"m": block("x.a", ("success", "CALL:leaf"))}, context_inheritance=False, static_memory={"k.mid": 2}),
        "leaf": node("l", {"l": block("x.leaf")}, static_memory={"k.leaf": 3}),
    }
    run = Driver(compile_nodes(nodes, caps))
    run.submit()
    run.finish()
    (sent,) = dispatches(run.finish())
    assert sent.context.inherited == {"k.mid": 2, "k.leaf": 3}


def test_the_merge_strategy_assembles_and_orders_the_payload() -> None:
    caps = [cap("x.a"), cap("x.b", outputs=["k.n"]), cap("x.c")]
    strategy = ["text:be brief", "block:second", "memory:rule.style", "context:k.n", "type:CODE", "all", "context:k.unset"]
    nodes = {"main": node("first", {
        "first": block("x.a", ("success", "JUMP:second")),
        "second": block("x.b", ("success", "JUMP:third")),
        "third": block("x.c", payload_merge_strategy=strategy),
    }, static_memory={"rule.style": {"tone": "dry"}})}
    run = Driver(compile_nodes(nodes, caps))
    run.submit()
    run.finish(segments=[Segment("w1", "NOTE", "a1"), Segment("w2", "CODE", "a2")])
    (sent,) = dispatches(run.finish(outputs={"k.n": 7}, segments=[Segment("w", "NOTE", "b1")]))
    assert sent.context.payload == [
        Segment("text:0", "INSTRUCTION", "be brief"),
        Segment("s2.1", "NOTE", "b1", "second"),
        Segment("memory:rule.style", "STATIC_MEMORY", '{"tone":"dry"}'),
        Segment("context:k.n", "CONTEXT", "7"),
        Segment("s1.2", "CODE", "a2", "first"),
        Segment("s1.1", "NOTE", "a1", "first"),
    ]
    # an empty strategy means "all": the run's segments, oldest first
    assert [s.id for s in run.state.payload] == ["s1.1", "s1.2", "s2.1"]


def test_last_n_takes_the_most_recent_segments() -> None:
    nodes = {"main": node("a", {
        "a": block("x.a", ("success", "JUMP:b")),
        "b": block("x.a", payload_merge_strategy=["last:2"]),
    })}
    run = Driver(compile_nodes(nodes, [cap("x.a")]))
    run.submit()
    segs = [Segment("w", "NOTE", str(i)) for i in range(3)]
    (sent,) = dispatches(run.finish(segments=segs))
    assert [s.id for s in sent.context.payload] == ["s1.2", "s1.3"]


def test_the_contract_and_system_layers() -> None:
    nodes = {"main": node("a", {"a": block("x.a", instructions="Be careful", artifacts=["model.ifc"])})}
    run = Driver(compile_nodes(nodes, [cap("x.a")], manifest_hash="h1", worktree="/wt"))
    (sent,) = run.submit()
    assert sent.context.contract == BlockContract("main", "a", "x.a", "Be careful")
    assert sent.context.system == SystemMetadata("r1", "main", "a", "s1", "h1", "/wt")
    assert sent.context.artifact == {}
    assert sent.artifacts == ["model.ifc"]


def test_an_earlier_output_feeds_a_later_input_through_its_ontology_key() -> None:
    caps = [
        cap("x.lang", outputs=["obdc.base.lang.code"]),
        cap("x.report", input_schema=schema("obdc.base.lang.code", required=("obdc.base.lang.code",))),
    ]
    nodes = {"main": node("a", {"a": block("x.lang", ("success", "JUMP:b")), "b": block("x.report")})}
    run = Driver(compile_nodes(nodes, caps))
    run.submit()
    (sent,) = dispatches(run.finish(outputs={"obdc.base.lang.code": "pt_BR", "undeclared": 1}))
    assert sent.inputs == {"obdc.base.lang.code": "pt_BR"}
    assert run.state.context == {"obdc.base.lang.code": "pt_BR"}
    assert run.state.trace[0].dropped_outputs == ["undeclared"]


def test_outputs_of_a_capability_that_declares_none_are_all_dropped() -> None:
    run = Driver(compile_nodes({"main": node("a", {"a": block("x.a")})}, [cap("x.a")]))
    run.submit({"k.in": 1})
    run.finish(outputs={"k.x": 1, "k.y": 2})
    assert run.state.context == {"k.in": 1}
    assert run.state.trace[0].dropped_outputs == ["k.x", "k.y"]


def test_resolution_order_params_memory_context_defaults_schema_default() -> None:
    keys = ("k.p", "k.m", "k.c", "k.d", "k.s", "k.none")
    everywhere = {k: "schema" for k in keys[:5]}
    worker = cap("x.a", input_schema=schema(*keys, defaults=everywhere))
    nodes = {"main": node(
        "a",
        {"a": block("x.a", params={"k.p": "params"})},
        static_memory={"k.p": "memory", "k.m": "memory"},
    )}
    defaults = {"k.p": "defaults", "k.m": "defaults", "k.c": "defaults", "k.d": "defaults"}
    run = Driver(compile_nodes(nodes, [worker], defaults=defaults))
    (sent,) = run.submit({"k.p": "context", "k.m": "context", "k.c": "context"})
    assert sent.inputs == {"k.p": "params", "k.m": "memory", "k.c": "context", "k.d": "defaults", "k.s": "schema"}


def test_a_required_key_resolved_nowhere_ends_the_step_invalid_without_dispatch() -> None:
    worker = cap("x.a", input_schema=schema("k.opt", "k.need", required=("k.need",)))
    nodes = {"main": node("a", {"a": block("x.a", ("invalid", "JUMP:h")), "h": block("x.b")})}
    run = Driver(compile_nodes(nodes, [worker, cap("x.b")]))
    cmds = run.submit()
    assert [d.capability for d in dispatches(cmds)] == ["x.b"]  # x.a never went out
    entry = run.state.trace[0]
    assert (entry.capability, entry.event, entry.attempt, entry.action) == ("x.a", "invalid", 0, "JUMP:h")
    assert entry.error == (
        "required input 'k.need' resolved to nothing "
        "(block params, static memory, run context, defaults, schema default)"
    )
    failure = run.state.context["ontoflow.last_failure"]
    assert failure == {"block": "a", "node": "main", "capability": "x.a", "event": "invalid",
                       "reason": "missing_input", "error": entry.error}


def test_an_invalid_step_without_a_route_fails_the_run() -> None:
    worker = cap("x.a", input_schema=schema("k.need", required=("k.need",)))
    run = Driver(compile_nodes({"main": node("a", {"a": block("x.a")})}, [worker]))
    (ended,) = run.submit()
    assert isinstance(ended, RunEnded) and ended.status == "failed"
