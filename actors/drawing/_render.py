"""Turning a scene into the bytes of a format: Mermaid and DOT as text, SVG and PNG through
Graphviz's ``dot`` when it is on PATH."""

from __future__ import annotations

import shutil
import subprocess

from ontoflow.actors.drawing._dot import to_dot
from ontoflow.actors.drawing._mermaid import to_mermaid
from ontoflow.actors.drawing._scene import Scene
from ontoflow.actors.drawing.errors import DrawingError, GraphvizMissingError

__all__ = ["FORMATS", "GRAPHVIZ_HINT", "render"]

FORMATS = ("mermaid", "dot", "svg", "png")

GRAPHVIZ_HINT = (
    "SVG and PNG need Graphviz's `dot`, which is not on PATH: install Graphviz "
    "(`apt-get install graphviz`, `brew install graphviz`), or ask for --format mermaid or --format dot"
)


def render(scene: Scene, fmt: str) -> bytes:
    """The scene in ``fmt`` (one of :data:`FORMATS`).

    Raises:
        GraphvizMissingError: for ``svg``/``png`` when ``dot`` is not on PATH.
        DrawingError: when ``fmt`` is unknown or ``dot`` fails.
    """
    if fmt == "mermaid":
        return to_mermaid(scene).encode()
    if fmt == "dot":
        return to_dot(scene).encode()
    if fmt not in FORMATS:
        raise DrawingError(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}")
    exe = shutil.which("dot")
    if exe is None:
        raise GraphvizMissingError(GRAPHVIZ_HINT)
    try:
        done = subprocess.run([exe, f"-T{fmt}"], input=to_dot(scene).encode(), capture_output=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DrawingError(f"Graphviz's dot could not run: {exc}") from None
    if done.returncode != 0:
        raise DrawingError(f"Graphviz's dot failed ({done.returncode}): {done.stderr.decode(errors='replace').strip()[:500]}")
    return done.stdout
