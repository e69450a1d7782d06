"""What a picture shows, before it is written as Mermaid or DOT: a :class:`Scene`.

A workflow's scene has a cluster per node, a box per block (its capability underneath),
transitions as edges labelled with their signals (``CALL`` edges to the callee's entry block,
``RETURN`` edges to where the checker found they return, ``SIGNAL:FAIL_DEFAULT`` edges
dashed), and an end marker. A plan's scene is its DAG, edges labelled with the references that
flow along them. Findings mark the box (or cluster) their path names; a run overlay numbers
the boxes in the order the run visited them and marks where a failed run ended.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from ontoflow.protocols.events import FAIL_DEFAULT
from ontoflow.protocols.manifest import Call, Jump, Return, WorkflowManifest, parse_action
from ontoflow.protocols.plan import ExecutionPlan, find_references, plan_dependencies

from ontoflow.actors.checker import Analysis, Finding, return_targets
from ontoflow.actors.drawing._overlay import RunOverlay

__all__ = ["Scene", "SceneEdge", "SceneNode", "plan_scene", "scene_of", "workflow_scene"]

END = "run_end"
_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


def node_id(*parts: str) -> str:
    """A readable drawing id made of ``parts``, safe in both Mermaid and DOT (not one to one:
    see :class:`_Ids`). It never begins with a digit: DOT reads "1st" as 1 and "st"."""
    out = "__".join(_UNSAFE.sub("_", p) for p in parts)
    return "n" + out if out[:1].isdigit() else out


#: The longest id a box is drawn with as its name reads (past it: cut, and a digest added).
_LONGEST_ID = 100


class _Ids:
    """The ids of one picture: readable, and one to one with the names they are made of.

    ``a-b``, ``a_b`` and ``a.b`` read alike, and node ``x`` block ``y__z`` reads as node ``x__y``
    block ``z`` (Mermaid and DOT then drew one box for both, a JUMP between them as a loop). An
    id that more than one name of the document (or a cluster, or the end) would read as is
    followed by ``___`` and a digest of its parts; the others stay as they read.
    """

    def __init__(self, names: list[tuple[str, ...]]) -> None:
        groups: dict[str, set[tuple[str, ...]]] = {END: {("",)}}
        for parts in names:
            groups.setdefault(node_id(*parts), set()).add(parts)
        self._shared = {readable for readable, group in groups.items() if len(group) > 1}

    def __call__(self, *parts: str) -> str:
        readable = node_id(*parts)
        if readable not in self._shared and len(readable) <= _LONGEST_ID:
            return readable
        # A long id is cut and made unique by its digest: each box's id is written with every
        # edge to and from it, and names of 100,000 characters made a 250 KB document a picture
        # of 150 MB (the names themselves stay in the boxes' labels, once each).
        return readable[:_LONGEST_ID] + "___" + hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass(slots=True)
class SceneNode:
    """A box: its id, its lines of text, its cluster and its marks."""

    id: str
    lines: list[str]
    cluster: str = ""
    shape: str = "box"
    severity: str = ""  # "error", "warning" or ""
    visited: bool = False
    failed: bool = False


@dataclass(slots=True)
class SceneEdge:
    """An arrow: ``style`` is ``solid``, ``dashed`` (fallback) or ``dotted`` (return)."""

    src: str
    dst: str
    label: str
    style: str = "solid"
    taken: bool = False


@dataclass(slots=True)
class Scene:
    """Everything one picture shows."""

    title: str
    nodes: list[SceneNode] = field(default_factory=list)
    edges: list[SceneEdge] = field(default_factory=list)
    clusters: dict[str, str] = field(default_factory=dict)  # id -> label
    notes: list[str] = field(default_factory=list)


def _mark(finding: Finding, by_path: dict[str, SceneNode]) -> SceneNode | None:
    """The box a finding's path names: the longest box path it starts with."""
    best = None
    for path, box in by_path.items():
        if (finding.path == path or finding.path.startswith(path + ".")) and (best is None or len(path) > len(best[0])):
            best = (path, box)
    return None if best is None else best[1]


def _apply_findings(scene: Scene, findings: list[Finding], by_path: dict[str, SceneNode]) -> None:
    # A mark per kind and box, counted: 1,000 findings of one block were a box 1,000 lines tall.
    marks: dict[int, dict[str, int]] = {}
    boxes: dict[int, SceneNode] = {}
    for f in findings:
        box = _mark(f, by_path)
        if box is not None:
            if box.severity != "error":
                box.severity = f.severity
            kinds = marks.setdefault(id(box), {})
            boxes[id(box)] = box
            mark = f"{'!!' if f.severity == 'error' else '!'} {f.kind}"
            kinds[mark] = kinds.get(mark, 0) + 1
        scene.notes.append(f"{f.severity}: {f.path}: [{f.kind}] {f.message}")
    for key, kinds in marks.items():
        boxes[key].lines.extend(mark if count == 1 else f"{mark} ({count:,})" for mark, count in kinds.items())


def workflow_scene(manifest: WorkflowManifest, analysis: Analysis | None, overlay: RunOverlay | None) -> Scene:
    """The scene of a workflow (with the checker's findings and a run's path when given)."""
    scene = Scene(title=manifest.name or "workflow")
    by_path: dict[str, SceneNode] = {}
    # The run's steps too: a block of the version it ran ("a-b") must not mark a box of this one ("a_b").
    ids = _Ids([("node", nid) for nid in manifest.nodes]
               + [(nid, bid) for nid, node in manifest.nodes.items() for bid in node.blocks]
               + [(step.node, step.block) for step in (overlay.steps if overlay is not None else ())])
    for nid, node in manifest.nodes.items():
        cluster = ids("node", nid)
        scene.clusters[cluster] = f"node {nid}" + (" (start)" if nid == manifest.start else "") + (
            "" if node.context_inheritance else " [no inheritance]")
        for bid, block in node.blocks.items():
            box = SceneNode(ids(nid, bid), [bid, block.worker], cluster=cluster)
            scene.nodes.append(box)
            by_path[f"nodes.{nid}.blocks.{bid}"] = box
        by_path[f"nodes.{nid}"] = by_path.get(f"nodes.{nid}") or SceneNode(cluster, [nid])
    end = SceneNode(END, ["run ends"], shape="end")
    scene.nodes.append(end)
    returns = _returns(analysis, ids)
    for nid, node in manifest.nodes.items():
        for bid, block in node.blocks.items():
            src = ids(nid, bid)
            for t in block.transitions:
                try:
                    action = parse_action(t.action)
                except ValueError:
                    continue
                style = "dashed" if t.on_signal == FAIL_DEFAULT else "solid"
                signal = "FAIL_DEFAULT" if t.on_signal == FAIL_DEFAULT else t.on_signal
                if isinstance(action, Jump) and action.block in node.blocks:
                    scene.edges.append(SceneEdge(src, ids(nid, action.block), signal, style))
                elif isinstance(action, Call) and action.node in manifest.nodes:
                    callee = manifest.nodes[action.node]
                    scene.edges.append(SceneEdge(src, ids(action.node, callee.entry_block), f"{signal} / CALL", style))
                elif isinstance(action, Return):
                    targets = returns.get((nid, bid), {END})
                    for dst in sorted(targets):
                        scene.edges.append(SceneEdge(src, dst, f"{signal} / RETURN", "dashed" if style == "dashed" else "dotted"))
            if not block.transitions:
                scene.edges.append(SceneEdge(src, END, "(no transitions)", "dotted"))
    if analysis is not None:
        _apply_findings(scene, analysis.report.findings, by_path)
    if overlay is not None:
        _apply_overlay(scene, overlay, lambda step: ids(step.node, step.block))
    return scene


def _returns(analysis: Analysis | None, ids: _Ids) -> dict[tuple[str, str], set[str]]:
    """Where each RETURN goes, as the checker's exploration found it."""
    out: dict[tuple[str, str], set[str]] = {}
    ex = analysis.exploration if analysis is not None else None
    if ex is None:
        return out
    targets = return_targets(ex)
    for ctrl, edges in ex.edges.items():
        if any(edge.end == "return" for edge in edges):
            found = targets.get((ctrl[0], ctrl[2], ctrl[3]), set())
            out.setdefault((ctrl[0], ctrl[1]), set()).update(
                END if dst is None else ids(dst[0], dst[1]) for dst in found)
    return out


#: The visits a box lists in full, first ones then the last; the others are one line.
_VISITS_SHOWN = 3


def _apply_overlay(scene: Scene, overlay: RunOverlay, box_of: object) -> None:
    boxes = {n.id: n for n in scene.nodes}
    edges = {(e.src, e.dst): e for e in scene.edges}
    visits: dict[str, list[str]] = {}
    previous: str | None = None
    for i, step in enumerate(overlay.steps, 1):
        bid = box_of(step)  # type: ignore[operator]
        box = boxes.get(bid)
        if box is None:
            continue
        box.visited = True
        extra = f" (prerequisite of {step.prerequisite_of})" if step.prerequisite_of else ""
        visits.setdefault(bid, []).append(
            f"#{i} {step.capability_short}{extra}: {step.event}, attempt {step.attempt}, {step.duration_ms:.0f} ms")
        if previous is not None and (previous, bid) in edges:
            edges[(previous, bid)].taken = True
        previous = bid
    for bid, lines in visits.items():  # a loop's block visited 5,000 times was a box 5,000 lines tall
        if len(lines) > _VISITS_SHOWN + 2:
            lines = [*lines[:_VISITS_SHOWN], f"... {len(lines) - _VISITS_SHOWN - 1:,} more visits ...", lines[-1]]
        boxes[bid].lines.extend(lines)
    if overlay.failed_step is not None:
        box = boxes.get(box_of(overlay.failed_step))  # type: ignore[operator]
        if box is not None:
            box.failed = True
            box.lines.append(f"run {overlay.status} here")
    scene.notes.append(f"run {overlay.run_id}: {overlay.status}" + (f" ({overlay.error})" if overlay.error else ""))


def plan_scene(plan: ExecutionPlan, analysis: Analysis | None, overlay: RunOverlay | None, kind: str = "plan") -> Scene:
    """The scene of a plan (a pipeline's compiled plan): its DAG and the references on it."""
    scene = Scene(title=plan.name or kind)
    by_path: dict[str, SceneNode] = {}
    ids = _Ids([("step", step.id) for step in plan.steps]
               + [("step", step.block) for step in (overlay.steps if overlay is not None else ())])
    for i, step in enumerate(plan.steps):
        box = SceneNode(ids("step", step.id), [step.id, step.capability] + ([] if step.required else ["(optional)"]))
        scene.nodes.append(box)
        by_path[f"steps[{i}]"] = box
    deps = plan_dependencies(plan)
    for step in plan.steps:
        refs: dict[str, list[str]] = {}
        for _, ref in find_references(step.params, ""):
            if not isinstance(ref, str):
                refs.setdefault(ref.step, []).append(ref.text)
        for dep in deps[step.id]:
            scene.edges.append(SceneEdge(ids("step", dep), ids("step", step.id), ", ".join(refs.pop(dep, []))))
        for src, texts in refs.items():  # a reference to a farther ancestor
            scene.edges.append(SceneEdge(ids("step", src), ids("step", step.id), ", ".join(texts), "dotted"))
    if analysis is not None:
        _apply_findings(scene, analysis.report.findings, by_path)
    if overlay is not None:
        _apply_overlay(scene, overlay, lambda s: ids("step", s.block))
    return scene


def scene_of(analysis: Analysis, overlay: RunOverlay | None = None) -> Scene:
    """The scene of whatever ``analysis`` holds; a document that did not load shows its findings only."""
    if analysis.manifest is not None:
        return workflow_scene(analysis.manifest, analysis, overlay)
    if analysis.plan is not None:
        return plan_scene(analysis.plan, analysis, overlay, analysis.report.kind)
    scene = Scene(title=analysis.report.document)
    _apply_findings(scene, analysis.report.findings, {})
    return scene
