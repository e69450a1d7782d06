"""Parsing and compiling manifests (seed 002's first mandatory test, and compile errors)."""

from __future__ import annotations

from typing import Any

import pytest

from ontoflow.protocols import ManifestError, RetryPolicy, manifest_from_data
from ontoflow.protocols.manifest import Block, Node, Transition, WorkflowManifest

from ontoflow.actors.orchestrator.engine import compile_workflow
from tests.actors.engine.helpers import block, cap, compile_nodes, node


def test_a_valid_manifest_parses_and_compiles() -> None:
    data = {
        "start": "main",
        "nodes": {
            "main": node(
                "load",
                {
                    "load": block("x.load", ("x.load.success", "JUMP:report"), ("SIGNAL:FAIL_DEFAULT", "RETURN")),
                    "report": block("x.report"),
                },
            )
        },
    }
    manifest = manifest_from_data(data)
    wf = compile_workflow(manifest, {"x.load": cap("x.load"), "x.report": cap("x.report")})
    plan = wf.block("main", "load")
    assert set(plan.actions) == {"success"}  # the full signal name is normalised to the short event
    assert plan.actions["success"].text == "JUMP:report"
    assert plan.fail_default is not None and plan.fail_default.text == "RETURN"
    assert plan.next_block == "report"
    assert wf.block("main", "report").next_block is None
    assert wf.block("main", "report").has_transitions is False


def test_an_invalid_manifest_is_rejected_with_paths() -> None:
    data = {
        "start": "main",
        "nodes": {"main": node("a", {"a": block("x.load", ("success", "JUMP:nowhere"))})},
    }
    with pytest.raises(ManifestError) as info:
        manifest_from_data(data)
    assert [p.path for p in info.value.problems] == ["nodes.main.blocks.a.transitions[0].action"]


def test_an_unknown_worker_is_reported_with_its_path() -> None:
    with pytest.raises(ManifestError) as info:
        compile_nodes({"main": node("a", {"a": block("x.ghost")})}, [cap("x.load")])
    assert [p.path for p in info.value.problems] == ["nodes.main.blocks.a.worker"]
    assert "x.ghost" in str(info.value)


def test_a_requires_cycle_is_reported_on_the_blocks_worker() -> None:
    caps = [cap("x.a", requires=["x.b"]), cap("x.b", requires=["x.c"]), cap("x.c", requires=["x.b"])]
    with pytest.raises(ManifestError) as info:
        compile_nodes({"main": node("a", {"a": block("x.a")})}, caps)
    (problem,) = info.value.problems
    assert problem.path == "nodes.main.blocks.a.worker"
    assert "cycle" in problem.message


def test_a_transitive_requirement_nobody_provides_is_reported() -> None:
    caps = [cap("x.a", requires=["x.b"]), cap("x.b", requires=["x.gone"])]
    with pytest.raises(ManifestError) as info:
        compile_nodes({"main": node("a", {"a": block("x.a")})}, caps)
    (problem,) = info.value.problems
    assert problem.path == "nodes.main.blocks.a.worker"
    assert "x.gone" in problem.message


def test_prerequisites_are_in_run_order_and_budgets_are_derived() -> None:
    caps = [
        cap("x.a", requires=["x.b", "x.c"], timeout_ms=1000, retry=RetryPolicy(max_retries=1, initial_ms=100, jitter=0.5)),
        cap("x.b", requires=["x.c"], timeout_ms=None),
        cap("x.c"),
    ]
    wf = compile_nodes(
        {"main": node("a", {"a": block("x.a"), "b": block("x.b"), "c": block("x.c", timeout_ms=5)})}, caps
    )
    a = wf.capabilities["x.a"]
    assert a.requires == ("x.c", "x.b")
    # 2 attempts of 1000 ms + one backoff of 100 ms stretched by the jitter, + 1000 ms of slack
    assert a.budget_ms == 2 * 1000 + 150 + 1000
    assert wf.block("main", "b").budget_ms is None
    assert wf.block("main", "c").budget_ms == 5


def test_max_steps_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_steps"):
        compile_nodes({"main": node("a", {"a": block("x.a")})}, [cap("x.a")], max_steps=0)


@pytest.mark.parametrize(("node_fields", "start", "path", "message"), [
    ({"entry_block": "nope", "blocks": {"a": Block(worker="x.load")}}, "main", "nodes.main.entry_block",
     "block 'nope' is not in node 'main'"),
    ({"entry_block": "a", "blocks": {"a": Block(worker="x.load")}}, "elsewhere", "start", "node 'elsewhere' does not exist"),
    ({"entry_block": "a", "blocks": {}}, "main", "nodes.main.blocks", "a node needs at least one block"),
    ({"entry_block": "a", "blocks": {"a": Block(worker="x.load", transitions=[Transition(on_signal="success", action="JUMP:zz")])}},
     "main", "nodes.main.blocks.a.transitions[0].action", "JUMP to block 'zz' that does not exist in node 'main'"),
    ({"entry_block": "a", "blocks": {"a": Block(worker="x.load", transitions=[Transition(on_signal="success", action="CALL:gone")])}},
     "main", "nodes.main.blocks.a.transitions[0].action", "CALL to node 'gone' that does not exist"),
    ({"entry_block": "a", "blocks": {"a": Block(worker="x.load", payload_merge_strategy=["most"])}},
     "main", "nodes.main.blocks.a.payload_merge_strategy[0]", "unknown merge instruction"),
])
def test_a_manifest_built_in_code_is_checked_as_a_loaded_one(
    node_fields: dict[str, Any], start: str, path: str, message: str
) -> None:
    # msgspec Structs check nothing as they are made: such a manifest reached the engine, which
    # raised KeyError at RunSubmitted (a missing entry block or start) or on the JUMP/CALL taken.
    manifest = WorkflowManifest(start=start, nodes={"main": Node(**node_fields)})
    with pytest.raises(ManifestError) as info:
        compile_workflow(manifest, {"x.load": cap("x.load")})
    ((problem),) = info.value.problems
    assert problem.path == path
    assert message in problem.message
