"""Exploring every control state a run of a manifest can be in, and what each guarantees.

A run's control state is ``(node, block, return stack)``; a frame of the stack is ``(node,
block to return to)``, ``None`` when the calling block was the last of its node (returning
there returns again, as the engine does). The analysis treats every event a step can end with
as possible (the capability's declared events, ``failure``, ``timeout`` and ``unavailable``
always; ``prerequisite_failed`` where a prerequisite may still have to run; ``invalid`` where a
required key may be missing or the table routes it), so a path here is a run that can happen.

**The bound.** A reachable stack that holds the same frame twice can be pumped: the steps
between the two pushes never pop below the first, so they can be repeated from the second, and
the stack grows without end. Conversely, a stack deeper than the number of distinct frames
holds a repeat. So the exploration never pushes a frame already on the stack: it reports that
``CALL`` as unbounded recursion instead, and every stack it keeps is at most as deep as the
manifest has ``CALL`` transitions. The control states are therefore finite, and the analysis is
exact for what it models.

Over those states runs a *must* analysis (a fixpoint of set intersections): the context keys
and the succeeded capabilities that hold on **every** path into a state. Keys only ever get
added to a run's context, so the meet is intersection and the fixpoint is reached after a
number of passes bounded by the keys in play.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ontoflow.protocols.actions import Call, Jump
from ontoflow.protocols.events import FAILURE, INVALID, PREREQUISITE_FAILED, TIMEOUT, UNAVAILABLE, is_success

from ontoflow.actors.checker._model import BlockModel, Model, Route
from ontoflow.actors.orchestrator.engine import LAST_FAILURE_KEY

__all__ = ["Ctrl", "Edge", "Exploration", "explore", "format_step"]

Frame = tuple[str, "str | None"]
#: ``(node, block, stack)``.
Ctrl = tuple[str, str, tuple[Frame, ...]]

_ALWAYS = (FAILURE, TIMEOUT, UNAVAILABLE)
_EMPTY: frozenset[str] = frozenset()
_FAILURE_KEYS = frozenset({LAST_FAILURE_KEY})

#: The most control states one analysis explores before it gives up (a finding says so).
MAX_STATES = 200_000


@dataclass(frozen=True, slots=True)
class Edge:
    """One way out of a control state.

    Attributes:
        event: the short event the step ended with.
        route: the transition taken, ``None`` when none matched (the run ends).
        target: the next control state, ``None`` when the run ends.
        end: how the run ends when ``target`` is ``None``: ``completed``, ``failed``,
            ``no-transition`` or ``recursion`` (a CALL the exploration did not follow).
        adds: context keys guaranteed after this edge.
        succeeds: capabilities guaranteed to have succeeded after this edge.
        popped: the frames a RETURN popped, nearest first.
    """

    event: str
    route: Route | None
    target: Ctrl | None
    end: str
    adds: frozenset[str]
    succeeds: frozenset[str]
    popped: tuple[Frame, ...] = ()


@dataclass(slots=True)
class Exploration:
    """The result: every reachable control state, what it guarantees and its ways out."""

    model: Model
    start: Ctrl | None
    initial_keys: frozenset[str]
    values: dict[Ctrl, tuple[frozenset[str], frozenset[str]]]
    edges: dict[Ctrl, list[Edge]]
    parent: dict[Ctrl, tuple[Ctrl, Edge] | None]
    truncated: bool

    def path_to(self, ctrl: Ctrl) -> list[str]:
        """The first-found run reaching ``ctrl``, one step per item."""
        steps: list[str] = []
        current: Ctrl | None = ctrl
        while current is not None:
            link = self.parent.get(current)
            if link is None:
                break
            prev, edge = link
            steps.append(format_step(prev, edge))
            current = prev
        steps.reverse()
        return steps

    def path_avoiding(self, ctrl: Ctrl, key: str) -> list[str] | None:
        """A shortest run reaching ``ctrl`` on which ``key`` is never put into the context.

        ``None`` when every run reaching ``ctrl`` provides ``key`` (or ``ctrl`` is the start and
        ``key`` is a declared input).
        """
        if self.start is None or key in self.initial_keys:
            return None
        parent: dict[Ctrl, tuple[Ctrl, Edge] | None] = {self.start: None}
        queue = deque([self.start])
        while queue:
            current = queue.popleft()
            if current == ctrl:
                steps: list[str] = []
                node: Ctrl | None = current
                while (link := parent[node]) is not None:  # type: ignore[index]
                    steps.append(format_step(link[0], link[1]))
                    node = link[0]
                steps.reverse()
                return steps
            for edge in self.edges.get(current, ()):
                if edge.target is not None and key not in edge.adds and edge.target not in parent:
                    parent[edge.target] = (current, edge)
                    queue.append(edge.target)
        return None


def format_step(ctrl: Ctrl, edge: Edge) -> str:
    """One step of a counterexample: ``main.a --success--> CALL:sub (push main.b)``."""
    node, block, _ = ctrl
    head = f"{node}.{block} --{edge.event}-->"
    if edge.route is None:
        return f"{head} run ends ({edge.end})"
    action = edge.route.action
    text = edge.route.text
    if isinstance(action, Call):
        ret = f"{node}.{edge.target[2][-1][1]}" if edge.target and edge.target[2][-1][1] else f"{node} (last block: returns again)"
        return f"{head} {text} (push {ret})" if edge.target else f"{head} {text} ({edge.end})"
    if isinstance(action, Jump):
        return f"{head} {text}"
    if edge.target is None:
        return f"{head} RETURN (stack empty: run completes)"
    return f"{head} RETURN (pop -> {edge.target[0]}.{edge.target[1]})"


def inherited(model: Model, node: str, stack: tuple[Frame, ...]) -> dict[str, tuple[Any, str]]:
    """The static memory a step of ``node`` sees with ``stack``: key -> (value, its path).

    The same walk as the engine's ``inherited_memory``: the node's own memory, then its
    callers' while the node just consulted has ``context_inheritance``; the nearest wins.
    """
    cached = model.memory.get((node, stack))
    if cached is not None:
        return cached
    nodes = model.manifest.nodes
    current = nodes[node]
    chain = [(node, current)]
    if current.context_inheritance:
        for frame in reversed(stack):
            if not current.context_inheritance:
                break
            current = nodes[frame[0]]
            chain.append((frame[0], current))
    merged: dict[str, tuple[Any, str]] = {}
    for node_id, n in reversed(chain):
        for key, value in n.static_memory.items():
            merged[key] = (value, f"nodes.{node_id}.static_memory.{key}")
    model.memory[(node, stack)] = merged
    return merged


def missing_keys(model: Model, b: BlockModel, ctrl: Ctrl, keys: frozenset[str], succeeded: frozenset[str],
                 memory: dict[str, tuple[Any, str]]) -> Iterator[tuple[str, str]]:
    """Yield ``(capability, key)`` for each required key that may resolve to nothing here.

    The block's own capability sees its params, the inherited memory, the context (which by
    then holds its prerequisites' outputs) and schema defaults; a prerequisite that may still
    have to run sees no params and the outputs of the prerequisites before it.
    """
    cap = b.cap
    if cap is None:
        return
    have = set(keys)
    for req in cap.closure:
        pre = model.caps.get(req)
        if pre is not None and req not in succeeded:
            for key in pre.required:
                if key not in have and key not in memory and key not in pre.defaults:
                    yield req, key
        if pre is not None:
            have |= pre.outputs
    for key in cap.required:
        if key not in have and key not in b.params and key not in memory and key not in cap.defaults:
            yield cap.id, key


def _events(model: Model, b: BlockModel, ctrl: Ctrl, keys: frozenset[str], succeeded: frozenset[str]) -> list[str]:
    """Every event the block's step can end with in this state, in a stable order."""
    cap = b.cap
    events: list[str] = list(cap.events) if cap is not None else ["success"]
    events.extend(e for e in _ALWAYS if e not in events)
    if cap is not None and any(req not in succeeded for req in cap.closure):
        events.append(PREREQUISITE_FAILED)
    if INVALID not in events:
        if INVALID in b.routes or next(missing_keys(model, b, ctrl, keys, succeeded, inherited(model, ctrl[0], ctrl[2])), None):
            events.append(INVALID)
    if PREREQUISITE_FAILED in b.routes and PREREQUISITE_FAILED not in events and cap is not None and cap.closure:
        events.append(PREREQUISITE_FAILED)
    return events


def _edges(model: Model, ctrl: Ctrl, keys: frozenset[str], succeeded: frozenset[str]) -> list[Edge]:
    node, block, stack = ctrl
    b = model.blocks[(node, block)]
    cap = b.cap
    out: list[Edge] = []
    for event in _events(model, b, ctrl, keys, succeeded):
        adds: frozenset[str] = _EMPTY
        wins: frozenset[str] = _EMPTY
        if cap is not None and event != PREREQUISITE_FAILED:
            adds, wins = cap.closure_outputs, frozenset(cap.closure)
            if is_success(event):
                adds, wins = adds | cap.outputs, wins | {cap.id}
        if not is_success(event):
            adds = adds | _FAILURE_KEYS  # the engine records every failed step there
        route = b.routes.get(event) or b.fail_default
        if route is None:
            if b.has_transitions:
                end = "no-transition"
            else:
                end = "completed" if is_success(event) else "failed"
            out.append(Edge(event, None, None, end, adds, wins))
            continue
        action = route.action
        if isinstance(action, Jump):
            out.append(Edge(event, route, (node, action.block, stack), "", adds, wins))
        elif isinstance(action, Call):
            frame = (node, b.next_block)
            callee = model.manifest.nodes.get(action.node)
            if callee is None or callee.entry_block not in callee.blocks:
                continue  # reported by the loader
            if frame in stack:
                out.append(Edge(event, route, None, "recursion", adds, wins))
            else:
                out.append(Edge(event, route, (action.node, callee.entry_block, (*stack, frame)), "", adds, wins))
        else:
            rest = list(stack)
            popped: list[Frame] = []
            target: Ctrl | None = None
            while rest:
                frame = rest.pop()
                popped.append(frame)
                if frame[1] is not None:
                    target = (frame[0], frame[1], tuple(rest))
                    break
            out.append(Edge(event, route, target, "" if target else "completed", adds, wins, tuple(popped)))
    return out


def explore(model: Model) -> Exploration:
    """Explore every control state reachable from the manifest's start, to the fixpoint."""
    manifest = model.manifest
    initial = frozenset(manifest.inputs)
    start_node = manifest.nodes.get(manifest.start)
    if start_node is None or (manifest.start, start_node.entry_block) not in model.blocks:
        return Exploration(model, None, initial, {}, {}, {}, False)
    start: Ctrl = (manifest.start, start_node.entry_block, ())
    values = {start: (initial, _EMPTY)}
    parent: dict[Ctrl, tuple[Ctrl, Edge] | None] = {start: None}
    edges: dict[Ctrl, list[Edge]] = {}
    queue = deque([start])
    queued = {start}
    truncated = False
    while queue:
        ctrl = queue.popleft()
        queued.discard(ctrl)
        keys, wins = values[ctrl]
        out = edges[ctrl] = _edges(model, ctrl, keys, wins)
        for edge in out:
            target = edge.target
            if target is None:
                continue
            new_keys, new_wins = keys | edge.adds, wins | edge.succeeds
            old = values.get(target)
            if old is None:
                if len(values) >= MAX_STATES:
                    truncated = True
                    continue
                values[target] = (new_keys, new_wins)
                parent[target] = (ctrl, edge)
            else:
                met = (old[0] & new_keys, old[1] & new_wins)
                if met == old:
                    continue
                values[target] = met
            if target not in queued:
                queued.add(target)
                queue.append(target)
    return Exploration(model, start, initial, values, edges, parent, truncated)


def reaches_end(exploration: Exploration) -> set[Ctrl]:
    """The control states from which some path ends the run."""
    back: dict[Ctrl, list[Ctrl]] = {}
    good: set[Ctrl] = set()
    todo: list[Ctrl] = []
    for ctrl, out in exploration.edges.items():
        for edge in out:
            if edge.target is None:
                if ctrl not in good:
                    good.add(ctrl)
                    todo.append(ctrl)
            else:
                back.setdefault(edge.target, []).append(ctrl)
    while todo:
        for prev in back.get(todo.pop(), ()):
            if prev not in good:
                good.add(prev)
                todo.append(prev)
    return good


def blocks_of(states: Iterable[Ctrl]) -> set[tuple[str, str]]:
    """The ``(node, block)`` pairs of ``states``."""
    return {(n, b) for n, b, _ in states}
