"""A box marks each kind of finding once, however many findings of that kind its path has."""

from __future__ import annotations

from ontoflow.actors.checker import analyse_document
from ontoflow.actors.drawing import scene_of
from tests.actors.engine.helpers import block, cap, node


def test_a_block_with_a_thousand_findings_keeps_a_box_of_a_few_lines() -> None:
    # 1,000 transitions on signals its capability never emits: 1,000 capability findings on one
    # block, and its box had a "!! capability" line for each, a label of 15,000 characters
    # 1,000 lines tall (the visits of a polling loop were cut so for the same reason).
    routes = [(f"x{i}", "JUMP:b") for i in range(1000)]
    doc = {"start": "m", "nodes": {"m": node("a", {"a": block("t.a", ("success", "JUMP:b"), *routes),
                                                   "b": block("t.a")})}}
    analysis = analyse_document(doc, {"t.a": cap("t.a")}, name="marks")
    assert sum(f.kind == "capability" for f in analysis.report.findings) >= 1000
    scene = scene_of(analysis)
    [box] = [n for n in scene.nodes if n.lines[0] == "a"]
    assert box.severity == "error"
    assert box.lines[:3] == ["a", "t.a", "!! capability (1,000)"] and len(box.lines) <= 4  # and its other kinds
    assert len(scene.notes) >= 1000  # every finding is still listed (the DOT note shows the first 12)
