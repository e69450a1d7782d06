"""A :class:`~._scene.Scene` as Graphviz DOT text."""

from __future__ import annotations

import re
import textwrap

from ontoflow.actors.drawing._scene import Scene, SceneNode
from ontoflow.actors.drawing._visible import visible

__all__ = ["to_dot"]

_FILL = {"error": "#fde2e2", "warning": "#fff4d6"}
_LINE = {"error": "#cc0000", "warning": "#cc9900"}
_BLUE = "#0563c1"


#: Control characters other than the newline: shown as ``\\xNN`` text (a raw CR or NUL in a
#: label is not text Graphviz draws, and a NUL ends its input).
_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f]")


def _q(s: str) -> str:
    """A DOT double-quoted string (lines joined by ``\\n``)."""
    s = visible(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return '"' + _CONTROL.sub(lambda m: f"\\\\x{ord(m[0]):02x}", s) + '"'


def _box(n: SceneNode) -> str:
    attrs = [f"label={_q(chr(10).join(n.lines))}"]
    if n.shape == "end":
        attrs += ["shape=doublecircle", "style=filled", 'fillcolor="#eeeeee"']
    if n.failed:
        attrs += ['fillcolor="#f8b4b4"', 'color="#990000"', "penwidth=3"]
    elif n.severity:
        attrs += [f'fillcolor="{_FILL[n.severity]}"', f'color="{_LINE[n.severity]}"', "penwidth=2"]
    elif n.visited:
        attrs += [f'color="{_BLUE}"', "penwidth=3"]
    return f"{n.id} [{', '.join(attrs)}];"


def to_dot(scene: Scene) -> str:
    """The scene as a ``digraph``: clusters for nodes, styles for findings and the run's path."""
    out = [
        f"digraph {_q(scene.title)} {{",
        "  rankdir=TB;",
        f"  label={_q(scene.title)}; labelloc=t; fontname=Helvetica;",
        '  node [shape=box, style="rounded,filled", fillcolor=white, fontname=Helvetica, fontsize=11];',
        "  edge [fontname=Helvetica, fontsize=10];",
    ]
    by_cluster: dict[str, list[SceneNode]] = {}
    for n in scene.nodes:
        by_cluster.setdefault(n.cluster, []).append(n)
    for cluster, label in scene.clusters.items():
        out.append(f"  subgraph cluster_{cluster} {{")
        out.append(f'    label={_q(label)}; style="rounded,dashed"; color="#888888";')
        out.extend(f"    {_box(n)}" for n in by_cluster.get(cluster, []))
        out.append("  }")
    out.extend(f"  {_box(n)}" for n in by_cluster.get("", []))
    for e in scene.edges:
        attrs = [f"label={_q(e.label)}"] if e.label else []
        if e.style != "solid":
            attrs.append(f"style={e.style}")
        if e.taken:
            attrs += [f'color="{_BLUE}"', "penwidth=2.5"]
        out.append(f"  {e.src} -> {e.dst}" + (f" [{', '.join(attrs)}]" if attrs else "") + ";")
    if scene.notes:
        lines = [wrapped for note in scene.notes[:12] for wrapped in textwrap.wrap(note, 90, subsequent_indent="    ")]
        text = "\n".join(lines) + ("\n..." if len(scene.notes) > 12 else "")
        out.append(f"  notes [shape=note, style=filled, fillcolor=\"#f7f7f7\", fontsize=9, label={_q(text)}];")
    out.append("}")
    return "\n".join(out) + "\n"
