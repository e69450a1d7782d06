"""Names that must not change a picture: ids that sanitise alike, digits first, text that is syntax."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from ontoflow.actors.checker import analyse_document
from ontoflow.actors.drawing import render, scene_of, to_dot, to_mermaid
from tests.actors.engine.helpers import block, cap, node

CAPS = {"t.a": cap("t.a")}
#: DOT's unquoted ID: letters, digits and underscores, not beginning with a digit.
DOT_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _scene(doc: dict):
    return scene_of(analyse_document(doc, CAPS, name="hostile"))


def test_block_ids_that_differ_only_in_punctuation_are_different_boxes() -> None:
    # "a-b" and "a_b" are both valid ids; both were drawn as the box a_b (the JUMP between them
    # became a loop on one box), and node "x" block "y__z" was the box of node "x__y" block "z".
    doc = {"start": "x", "nodes": {
        "x": node("a-b", {"a-b": block("t.a", ("success", "JUMP:a_b")), "a_b": block("t.a", ("success", "CALL:x__y")),
                          "y__z": block("t.a")}),
        "x__y": node("z", {"z": block("t.a", ("success", "RETURN"))}),
    }}
    scene = _scene(doc)
    ids = [n.id for n in scene.nodes]
    assert len(ids) == len(set(ids)) == 5  # four blocks and the end
    assert all(e.src != e.dst for e in scene.edges)


def test_plan_step_ids_that_differ_only_in_punctuation_are_different_boxes() -> None:
    doc = {"name": "p", "steps": [{"id": "a-b", "capability": "t.a"},
                                  {"id": "a_b", "capability": "t.a", "depends_on": ["a-b"]}]}
    scene = _scene(doc)
    assert len({n.id for n in scene.nodes}) == 2
    [edge] = scene.edges
    assert edge.src != edge.dst


def test_dot_ids_are_valid_when_a_node_id_begins_with_a_digit() -> None:
    # Graphviz read "1st__a" as the number 1 and the id "st__a": two boxes, edges to the wrong one.
    doc = {"start": "1st", "nodes": {"1st": node("a", {"a": block("t.a", ("success", "JUMP:9"))}, ),
                                     }}
    doc["nodes"]["1st"]["blocks"]["9"] = block("t.a")
    dot = to_dot(_scene(doc))
    boxes = re.findall(r"^\s*(\S+) \[label=", dot, re.M)
    edges = re.findall(r"^\s*(\S+) -> (\S+?)[ ;]", dot, re.M)
    assert boxes and edges
    for name in boxes + [n for e in edges for n in e]:
        assert DOT_ID.fullmatch(name), name
    if shutil.which("dot"):
        done = subprocess.run(["dot", "-Tsvg"], input=dot.encode(), capture_output=True, check=False)
        assert done.returncode == 0 and b"Warning" not in done.stderr, done.stderr


@pytest.mark.parametrize("title", ["a: b", "# not a comment", "one\n---\nflowchart LR", 'say "hi" \\ <b>'])
def test_a_mermaid_title_stays_one_line_of_front_matter(title: str) -> None:
    doc = {"name": title, "steps": [{"id": "a", "capability": "t.a"}]}
    text = to_mermaid(_scene(doc))
    lines = text.splitlines()
    assert lines[0] == "---" and lines[2] == "---" and lines[3] == "flowchart TD"
    assert lines[1].startswith('title: "')  # a YAML double-quoted scalar: nothing in it is syntax


def test_mermaid_labels_hold_no_line_break_or_entity_of_the_name() -> None:
    # Ids are refused, but the picture still draws the document with its findings: a newline in
    # a label broke the flowchart, and "#quot;" in a name became a quote.
    name = "l\nine`#quot;"
    doc = {"start": "m", "nodes": {"m": node(name, {name: block("t.a")})}}
    text = to_mermaid(_scene(doc))
    box = next(line for line in text.splitlines() if "t.a" in line and "[" in line)
    assert box.rstrip().endswith('"]')
    assert "#quot;" not in box.split("<br/>")[0].replace("#35;quot;", "")
    assert "`" not in box


def test_dot_labels_escape_control_characters() -> None:
    name = "a\rb\x00c"
    doc = {"start": "m", "nodes": {"m": node(name, {name: block("t.a")})}}
    dot = to_dot(_scene(doc))
    assert "\r" not in dot and "\x00" not in dot
    if shutil.which("dot"):
        assert render(_scene(doc), "svg").startswith(b"<?xml")


def test_a_step_of_another_version_does_not_mark_a_box_whose_id_reads_alike() -> None:
    # The run went through block "a-b" of the version it ran; the document drawn has "a_b".
    from ontoflow.actors.drawing import OverlayStep, RunOverlay

    doc = {"start": "m", "nodes": {"m": node("a_b", {"a_b": block("t.a")})}}
    step = OverlayStep("s1", "m", "a-b", "t.a", "success", 1, 3.0)
    scene = scene_of(analyse_document(doc, CAPS, name="v2"), RunOverlay("r1", "completed", None, [step], None))
    [box] = [n for n in scene.nodes if n.lines[0] == "a_b"]
    assert not box.visited and not any(line.startswith("#1") for line in box.lines)


def test_a_block_a_run_visited_thousands_of_times_keeps_a_box_of_a_few_lines() -> None:
    # A polling loop visited its block 5,000 times: the box had a line per visit, a picture
    # 5,000 lines tall that Graphviz took minutes to lay out.
    from ontoflow.actors.drawing import OverlayStep, RunOverlay

    doc = {"start": "m", "nodes": {"m": node("poll", {"poll": block("t.a", ("success", "JUMP:poll"))})}}
    steps = [OverlayStep(f"s{i}", "m", "poll", "t.a", "success" if i < 4999 else "failure", 1, 2.0) for i in range(5000)]
    overlay = RunOverlay("r1", "failed", "boom", steps, steps[-1])
    scene = scene_of(analyse_document(doc, CAPS, name="poll"), overlay)
    [box] = [n for n in scene.nodes if n.lines[0] == "poll"]
    visits = [line for line in box.lines if line.startswith("#")]
    assert len(box.lines) < 12
    assert visits[0].startswith("#1 a: success") and visits[-1].startswith("#5000 a: failure")
    assert any("4,996 more visits" in line for line in box.lines)
    assert box.failed and box.lines[-1] == "run failed here"
