"""Text a picture shows as written: the characters that would make it read otherwise, made visible.

The bidirectional overrides and isolates (U+202A-U+202E, U+2066-U+2069, the marks U+200E and
U+200F) reorder what follows them when the picture is shown ("Trojan Source"): a document
named ``pay\\u202eevil`` was titled "paylive" in the SVG Graphviz drew and in GitHub's
Mermaid. C1 controls are no text either. Each is written as ``\\uXXXX``, as ``check`` writes it.
"""

from __future__ import annotations

import re

__all__ = ["visible"]

_INVISIBLE = re.compile("[\x80-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """``text`` with each bidirectional control and C1 control written as ``\\uXXXX``."""
    return _INVISIBLE.sub(lambda m: f"\\u{ord(m[0]):04x}", text)
