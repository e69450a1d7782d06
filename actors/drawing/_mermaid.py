"""A :class:`~._scene.Scene` as Mermaid flowchart text (GitHub renders it in Markdown)."""

from __future__ import annotations

import json
import re

from ontoflow.actors.drawing._scene import Scene, SceneNode
from ontoflow.actors.drawing._visible import visible

__all__ = ["to_mermaid"]

_CLASSES = (
    "classDef error fill:#fde2e2,stroke:#c00,stroke-width:2px",
    "classDef warning fill:#fff4d6,stroke:#c90,stroke-width:2px",
    "classDef visited stroke:#0563c1,stroke-width:3px",
    "classDef failed fill:#f8b4b4,stroke:#900,stroke-width:3px",
)


#: Characters that are syntax in a Mermaid label (or start one of its entity codes, or a
#: Markdown string), control characters (a newline ended the statement), and ``%``: Mermaid
#: reads ``%%{init: ...}%%`` anywhere in the text as its configuration (a name re-themed the
#: picture). Written as Mermaid's numeric entity codes, ``#35;`` for ``#``.
_SYNTAX = re.compile(r'[#"<>`%\x00-\x1f\x7f]')


#: ``%`` in a YAML double-quoted scalar, spelled so that no ``%%`` reaches the text.
_YAML_PERCENT = "\\x25"


def _text(s: str) -> str:
    return _SYNTAX.sub(lambda m: f"#{ord(m[0])};", visible(s))


def _box(n: SceneNode) -> str:
    label = "<br/>".join(_text(line) for line in n.lines)
    if n.shape == "end":
        return f'{n.id}((("{label}")))'
    return f'{n.id}["{label}"]'


def to_mermaid(scene: Scene) -> str:
    """The scene as a Mermaid ``flowchart``; findings and the run's path as classes."""
    # The title as a YAML double-quoted scalar (JSON's escapes are YAML's): a ": ", a "#" or a
    # newline in a name broke the front matter; "%" as YAML's "\x25", never a "%%{" directive.
    out = ["---", f"title: {json.dumps(visible(scene.title)).replace('%', _YAML_PERCENT)}", "---", "flowchart TD"]
    by_cluster: dict[str, list[SceneNode]] = {}
    for n in scene.nodes:
        by_cluster.setdefault(n.cluster, []).append(n)
    for cluster, label in scene.clusters.items():
        out.append(f'  subgraph {cluster}["{_text(label)}"]')
        out.extend(f"    {_box(n)}" for n in by_cluster.get(cluster, []))
        out.append("  end")
    out.extend(f"  {_box(n)}" for n in by_cluster.get("", []))
    styles: list[str] = []
    for i, e in enumerate(scene.edges):
        arrow = "==>" if e.taken else ("-.->" if e.style != "solid" else "-->")
        label = f'|"{_text(e.label)}"|' if e.label else ""
        out.append(f"  {e.src} {arrow}{label} {e.dst}")
        if e.style == "dashed":
            styles.append(f"  linkStyle {i} stroke-dasharray:6 4")
        if e.taken:
            styles.append(f"  linkStyle {i} stroke:#0563c1")
    out.extend(styles)
    out.extend(f"  {c}" for c in _CLASSES)
    for n in scene.nodes:
        cls = "failed" if n.failed else (n.severity or ("visited" if n.visited else ""))
        if cls:
            out.append(f"  class {n.id} {cls}")
    return "\n".join(out) + "\n"
