"""Names of thousands of characters: the report and the picture grow with the document, not with
the document times its blocks (every finding, counterexample step and edge named them again)."""

from __future__ import annotations

import json

import pytest

from ontoflow.actors.checker import analyse_document, render_text
from ontoflow.actors.drawing import render, scene_of
from tests.actors.engine.helpers import block, cap, node

CAPS = {"t.a": cap("t.a", events=["success", "failure", "empty"])}


def _long_doc(long_node: bool) -> dict:
    name = "n" * 20_000
    ids = [name + str(i) if not long_node else f"b{i}" for i in range(200)]
    blocks = {b: block("t.a", ("success", f"JUMP:{ids[i + 1]}")) for i, b in enumerate(ids[:-1])}
    blocks[ids[-1]] = block("t.a")
    nid = name if long_node else "m"
    return {"name": "long", "start": nid, "nodes": {nid: node(ids[0], blocks)}}


@pytest.mark.parametrize("long_node", [True, False], ids=["node", "blocks"])
def test_long_ids_make_a_report_the_size_of_the_document(long_node: bool) -> None:
    doc = _long_doc(long_node)
    size = len(json.dumps(doc))
    analysis = analyse_document(doc, CAPS, name="long")
    assert not analysis.report.ok
    assert any("longer than 128 characters" in f.message for f in analysis.report.errors)
    assert len(render_text(analysis.report)) < 2 * size  # was 200 findings of 50 steps naming them


@pytest.mark.parametrize("fmt", ["mermaid", "dot"])
def test_a_long_node_id_makes_a_picture_the_size_of_the_document(fmt: str) -> None:
    doc = _long_doc(True)
    picture = render(scene_of(analyse_document(doc, CAPS, name="long")), fmt)
    assert len(picture) < 2 * len(json.dumps(doc))  # every box's id and edge named the node: 400x
    assert picture.count(b"n" * 20_000) == 1  # the node's name, in its cluster's label
