"""A picture shows a name as it is written: bidirectional overrides and C1 controls made visible.

``pay\\u202eevil`` as a document's name was titled "paylive" where the DOT was drawn (raw in
its label) and in Mermaid (its title's YAML escape is the character again).
"""

from __future__ import annotations

import pytest

from ontoflow.actors.checker import analyse_document
from ontoflow.actors.drawing import render, scene_of
from tests.actors.engine.helpers import block, cap, node

HIDDEN = ["\u202e", "\u2066", "\u200f", "\x85"]


@pytest.mark.parametrize("fmt", ["mermaid", "dot"])
@pytest.mark.parametrize("char", HIDDEN, ids=[f"U+{ord(c):04X}" for c in HIDDEN])
def test_a_bidi_or_c1_character_in_a_name_is_drawn_as_its_code(fmt: str, char: str) -> None:
    doc = {"name": f"pay{char}evil", "start": "m", "nodes": {"m": node("a", {"a": block("t.a")})}}
    picture = render(scene_of(analyse_document(doc, {"t.a": cap("t.a")}, name=f"doc{char}")), fmt).decode()
    assert char not in picture
    # The backslash escaped (DOT's, YAML's): read back, the title is the text "\u202e", not the character.
    assert f"pay\\\\u{ord(char):04x}evil" in picture
