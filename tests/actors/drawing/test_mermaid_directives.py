"""Text of a document never becomes a Mermaid directive.

Mermaid reads ``%%{init: ...}%%`` anywhere in a diagram's text (its directive pattern is not
anchored to a line) as configuration, and takes it out of the label: a workflow's name, a
worker's id or a signal written so re-themed the picture (``theme``, ``themeCSS``, fonts) of
whoever rendered it. ``%`` is written as Mermaid's entity code ``#37;`` in labels and as the
YAML escape ``\\x25`` in the title, so no ``%%`` of the document reaches the text.
"""

from __future__ import annotations

import yaml

from ontoflow.actors.checker import analyse_document
from ontoflow.actors.drawing import OverlayStep, RunOverlay, scene_of, to_mermaid
from tests.actors.engine.helpers import block, cap, node

DIRECTIVE = "%%{init: {'theme': 'dark', 'themeCSS': '.node rect { fill: red; }'}}%%"


def test_no_name_signal_or_worker_brings_a_directive_into_the_mermaid_text() -> None:
    doc = {"name": DIRECTIVE, "start": "m", "nodes": {"m": node("a", {
        "a": block(f"t.{DIRECTIVE}", (f"s{DIRECTIVE}", "JUMP:b"), ("success", "JUMP:b")),
        "b": block("t.a"),
    })}}
    step = OverlayStep("s1", "m", "a", f"t.{DIRECTIVE}", f"e{DIRECTIVE}", 1, 3.0)
    scene = scene_of(analyse_document(doc, {"t.a": cap("t.a")}, name="hostile"),
                     RunOverlay("r1", "completed", None, [step], None))
    text = to_mermaid(scene)
    assert "%%" not in text
    assert "#37;#37;{init" in text  # still shown, as text
    front = text.split("---\n")[1]
    assert yaml.safe_load(front) == {"title": DIRECTIVE}  # the title reads as it was written
