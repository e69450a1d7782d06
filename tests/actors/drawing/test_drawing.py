"""Scenes, Mermaid and DOT of workflows and plans, findings marked and a run's path overlaid."""

from __future__ import annotations

import pytest

import ontoflow.actors.drawing as drawing
from ontoflow.actors.checker import analyse_document
from ontoflow.actors.drawing import GraphvizMissingError, overlay_from_state, render, scene_of, to_dot, to_mermaid
from ontoflow.protocols.manifest import manifest_from_data
from tests.actors.engine.helpers import Driver, block, cap, compile_nodes, node

CAPS = {c.id: c for c in (cap("t.a", events=["success", "empty", "failure"]), cap("t.b"))}

DOC = {"start": "main", "nodes": {
    "main": node("a", {
        "a": block("t.a", ("success", "CALL:sub"), ("empty", "JUMP:lost_not"), ("SIGNAL:FAIL_DEFAULT", "JUMP:c")),
        "lost_not": block("t.b"),
        "c": block("t.b", ("success", "RETURN")),
    }),
    "sub": node("s", {"s": block("t.b", ("success", "RETURN"))}, context_inheritance=False),
}}


def test_the_exports_are_sorted_and_complete() -> None:
    assert drawing.__all__ == sorted(drawing.__all__)
    for name in drawing.__all__:
        assert hasattr(drawing, name)


def test_a_workflow_scene_has_clusters_call_return_and_dashed_fallback_edges() -> None:
    scene = scene_of(analyse_document(DOC, CAPS))
    assert scene.clusters == {"node__main": "node main (start)", "node__sub": "node sub [no inheritance]"}
    edges = {(e.src, e.dst): (e.label, e.style) for e in scene.edges}
    assert edges[("main__a", "sub__s")] == ("success / CALL", "solid")
    # RETURN goes where the checker found it goes: after main.a, i.e. to main.lost_not.
    assert edges[("sub__s", "main__lost_not")] == ("success / RETURN", "dotted")
    assert edges[("main__a", "main__c")] == ("FAIL_DEFAULT", "dashed")
    assert edges[("main__c", "run_end")] == ("success / RETURN", "dotted")


def test_findings_are_marked_on_the_box_their_path_names() -> None:
    doc = {"start": "main", "nodes": {"main": node("a", {"a": block("t.a", ("success", "RETURN"))})}}
    scene = scene_of(analyse_document(doc, CAPS))
    [box] = [n for n in scene.nodes if n.id == "main__a"]
    assert box.severity == "warning" and "! unrouted-event (2)" in box.lines  # failure and timeout, counted
    dot = to_dot(scene)
    assert 'fillcolor="#fff4d6"' in dot and "notes [shape=note" in dot
    assert "  class main__a warning" in to_mermaid(scene)


def test_a_run_overlay_numbers_the_steps_and_marks_where_a_failed_run_ended() -> None:
    workflow = compile_nodes({"main": node("a", {"a": block("t.a", ("success", "JUMP:b")), "b": block("t.b")})},
                             [CAPS["t.a"], CAPS["t.b"]])
    driver = Driver(workflow)
    driver.submit()
    driver.finish("success")
    driver.finish("failure", error="boom")
    overlay = overlay_from_state("r1", driver.state)
    assert overlay.status == "failed" and overlay.failed_step is not None and overlay.failed_step.block == "b"
    manifest = manifest_from_data({"start": "main", "nodes": {"main": node("a", {"a": block("t.a", ("success", "JUMP:b")), "b": block("t.b")})}})
    scene = drawing.workflow_scene(manifest, None, overlay)
    boxes = {n.id: n for n in scene.nodes}
    assert boxes["main__a"].visited and boxes["main__a"].lines[-1].startswith("#1 a: success, attempt 1")
    assert boxes["main__b"].failed and boxes["main__b"].lines[-1] == "run failed here"
    assert [e.taken for e in scene.edges if (e.src, e.dst) == ("main__a", "main__b")] == [True]
    assert "==>" in to_mermaid(scene)


def test_a_plan_scene_is_its_dag_labelled_with_references() -> None:
    plan = {"steps": [
        {"id": "one", "capability": "t.a"},
        {"id": "two", "capability": "t.b", "depends_on": ["one"]},
        {"id": "three", "capability": "t.b", "depends_on": ["two"], "params": {}},
    ]}
    caps = {**CAPS, "t.a": cap("t.a", outputs=["k.x"]), "t.b": cap("t.b", input_schema={"type": "object", "properties": {"k.x": {}}})}
    plan["steps"][2]["params"] = {"k.x": "${one.k.x}"}
    scene = scene_of(analyse_document(plan, caps))
    edges = {(e.src, e.dst): (e.label, e.style) for e in scene.edges}
    assert edges[("step__one", "step__two")] == ("", "solid")
    assert edges[("step__one", "step__three")] == ("${one.k.x}", "dotted")


def test_svg_without_graphviz_raises_with_the_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(GraphvizMissingError, match="apt-get install graphviz"):
        render(scene_of(analyse_document(DOC, CAPS)), "svg")
    assert render(scene_of(analyse_document(DOC, CAPS)), "dot").startswith(b'digraph "workflow"')
