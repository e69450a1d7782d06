"""The manifest and its capabilities, reduced to what the analysis reads.

Everything here is derived once per check: each capability's declared events, required keys,
schema defaults, outputs and prerequisite closure; each block's routes by short event (as the
engine's ``compile_workflow`` normalises them), its fallback and its return address.
"""

from __future__ import annotations

import graphlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.events import FAIL_DEFAULT
from ontoflow.protocols.manifest import Action, Call, WorkflowManifest, parse_action, signal_event

__all__ = ["BlockModel", "CapModel", "Model", "Route", "build_model", "capability_model"]


@dataclass(frozen=True, slots=True)
class CapModel:
    """One capability as the analysis sees it.

    Attributes:
        id: the capability id.
        events: the events it declares, in declaration order.
        required: the keys its input schema marks as required.
        properties: key -> the property's schema.
        defaults: keys with a schema ``default``.
        outputs: the keys it writes when it succeeds.
        closure: its transitive prerequisites in run order (itself excluded).
        closure_outputs: the outputs of every prerequisite in the closure.
        problem: why its prerequisites cannot be run (a missing one, a cycle), or ``""``.
    """

    id: str
    events: tuple[str, ...]
    required: tuple[str, ...]
    properties: dict[str, Any]
    defaults: frozenset[str]
    outputs: frozenset[str]
    closure: tuple[str, ...]
    closure_outputs: frozenset[str]
    problem: str


@dataclass(frozen=True, slots=True)
class Route:
    """A transition: its action, its text and its index in the block's table."""

    action: Action
    text: str
    index: int


@dataclass(frozen=True, slots=True)
class BlockModel:
    """One block: its capability (``None`` when no loaded capability provides it) and routes."""

    node: str
    block: str
    worker: str
    cap: CapModel | None
    routes: dict[str, Route]
    fail_default: Route | None
    has_transitions: bool
    next_block: str | None
    params: dict[str, Any]

    @property
    def path(self) -> str:
        """The block's path in the document."""
        return f"nodes.{self.node}.blocks.{self.block}"


@dataclass(frozen=True, slots=True)
class Model:
    """The manifest reduced for the analysis."""

    manifest: WorkflowManifest
    blocks: dict[tuple[str, str], BlockModel]
    caps: dict[str, CapModel]
    called: frozenset[str]
    #: The keys any capability of the document reads (required, or given a schema): the only
    #: keys the analysis follows (see ``_explore.explore``).
    watched: frozenset[str] = frozenset()
    #: (node, stack) -> inherited memory, filled by the exploration (a cache, not a fact).
    memory: dict[Any, Any] = field(default_factory=dict)


def _closure(cap_id: str, catalog: Mapping[str, CapabilityMetadata]) -> tuple[tuple[str, ...], str]:
    """The transitive ``requires`` in run order, and a problem message (``""`` when sound)."""
    graph: dict[str, list[str]] = {}
    todo = [cap_id]
    while todo:
        current = todo.pop()
        if current in graph:
            continue
        reqs = list(catalog[current].requires)
        missing = [r for r in reqs if r not in catalog]
        if missing:
            return (), f"prerequisite {missing[0]!r} (of {current}) is provided by no loaded capability"
        graph[current] = reqs
        todo.extend(reversed(reqs))
    try:
        order = list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        return (), "prerequisites form a cycle: " + " -> ".join(reversed(exc.args[1]))
    order.remove(cap_id)
    return tuple(order), ""


def capability_model(meta: CapabilityMetadata, catalog: Mapping[str, CapabilityMetadata]) -> CapModel:
    """Reduce one capability's metadata (its closure looked up in ``catalog``)."""
    props = meta.input_schema.get("properties", {})
    props = props if isinstance(props, dict) else {}
    closure, problem = _closure(meta.id, catalog) if meta.id in catalog else ((), "")
    outs: set[str] = set()
    for req in closure:
        outs.update(catalog[req].outputs)
    return CapModel(
        id=meta.id,
        events=tuple(dict.fromkeys(meta.events)),
        required=tuple(meta.required_inputs),
        properties={k: p for k, p in props.items() if isinstance(p, dict)},
        defaults=frozenset(k for k, p in props.items() if isinstance(p, dict) and "default" in p),
        outputs=frozenset(meta.outputs),
        closure=closure,
        closure_outputs=frozenset(outs),
        problem=problem,
    )


def build_model(manifest: WorkflowManifest, catalog: Mapping[str, CapabilityMetadata]) -> Model:
    """Reduce ``manifest`` and the capabilities it uses for the analysis."""
    caps: dict[str, CapModel] = {}
    full: set[str] = set()  # the capabilities whose closure was looked up (the blocks' own)

    def cap(cap_id: str) -> CapModel | None:
        if cap_id not in catalog:
            return None
        if cap_id not in full:
            full.add(cap_id)
            caps[cap_id] = capability_model(catalog[cap_id], catalog)
            for req in caps[cap_id].closure:
                # A prerequisite is read for its contract (keys, outputs, events), never for
                # its own closure: looking each up made a chain of N requires cost N^2 (1,000:
                # 8.6 s for a manifest of 10 blocks).
                if req not in caps:
                    caps[req] = capability_model(catalog[req], {})
        return caps[cap_id]

    blocks: dict[tuple[str, str], BlockModel] = {}
    called: set[str] = set()
    for node_id, node in manifest.nodes.items():
        order = list(node.blocks)
        for index, (block_id, block) in enumerate(node.blocks.items()):
            routes: dict[str, Route] = {}
            fallback = None
            for i, t in enumerate(block.transitions):
                try:
                    action = parse_action(t.action)
                except ValueError:
                    continue  # reported by the loader
                route = Route(action, t.action, i)
                if isinstance(action, Call):
                    called.add(action.node)
                if t.on_signal == FAIL_DEFAULT:
                    fallback = route
                else:
                    routes.setdefault(signal_event(block.worker, t.on_signal), route)
            blocks[(node_id, block_id)] = BlockModel(
                node=node_id,
                block=block_id,
                worker=block.worker,
                cap=cap(block.worker),
                routes=routes,
                fail_default=fallback,
                has_transitions=bool(block.transitions),
                next_block=order[index + 1] if index + 1 < len(order) else None,
                params=block.params,
            )
    watched = frozenset(k for c in caps.values() for k in (*c.required, *c.properties))
    return Model(manifest=manifest, blocks=blocks, caps=caps, called=frozenset(called), watched=watched)

