"""Compiling a manifest once, so that a step's decision is a few dictionary look-ups.

Everything derivable from the manifest and the capability catalog is computed here: the actions
by short event, the fallback, the next block of each node's declaration order (the return
address of a ``CALL``), the parsed merge strategy, each capability's inputs, defaults, outputs,
prerequisite closure in run order and step budget.
"""

from __future__ import annotations

import graphlib
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.context import BlockContract, Segment
from ontoflow.protocols.errors import ManifestError, Problem
from ontoflow.protocols.events import FAIL_DEFAULT
from ontoflow.protocols.manifest import (
    MAX_CALL_DEPTH,
    Action,
    WorkflowManifest,
    check_workflow_capabilities,
    parse_action,
    signal_event,
    structure_problems,
)
from ontoflow.protocols.merge_strategy import MergeInstruction, parse_merge_instruction
from ontoflow.runtime.retry import worst_case_step_ms

from ontoflow.actors.orchestrator.engine._advance import advance as _advance
from ontoflow.actors.orchestrator.engine._commands import Command, Dispatch
from ontoflow.actors.orchestrator.engine._contract import EndedEngine
from ontoflow.actors.orchestrator.engine._memory import MemoryCache
from ontoflow.actors.orchestrator.engine._state import RunState
from ontoflow.actors.orchestrator.engine._steps import fixed_inputs

if TYPE_CHECKING:
    from ontoflow.actors.orchestrator.engine._facts import Fact
    from ontoflow.actors.orchestrator.engine._suspend import Suspension

__all__ = ["BlockPlan", "CapabilityPlan", "CompiledWorkflow", "NodePlan", "Route", "compile_workflow", "new_run"]

#: Slack added to the capability base's worst case, for the network and the worker's queue.
_DISPATCH_SLACK_MS = 1000

#: The longest step budget (ten years, as a submit's deadline): a retry policy with an infinite
#: or NaN delay was a ValueError as a workflow compiled, and 2**62 retries a loop that never
#: ended (a worker's Register is not checked as a loaded module is). Past this, the cap.
_MAX_BUDGET_MS = 10 * 365 * 86_400_000
_MAX_RETRIES_COUNTED = 1_000


@dataclass(frozen=True, slots=True)
class Route:
    """A transition's action: the text (for the trace) and its parsed form."""

    text: str
    action: Action


@dataclass(frozen=True, slots=True)
class CapabilityPlan:
    """What the engine needs of one capability, precomputed.

    Attributes:
        id: the capability id.
        meta: its metadata.
        prefix: ``id + "."``, to shorten full event names.
        input_keys: the input schema's property names, then required keys it does not declare.
        required_keys: keys the schema marks as required.
        schema_defaults: key -> the property's schema ``default``.
        outputs: keys the capability may write into the context bus.
        events: the events a step of it may end with: its declared events and the reserved ones.
        requires: the transitive prerequisites in run order (dependencies first), itself excluded.
        budget_ms: the schedule-to-close budget: the capability base's worst case plus slack,
            ``None`` when the capability has no timeout.
        idempotent: re-running after a lost worker is safe.
    """

    id: str
    meta: CapabilityMetadata
    prefix: str
    input_keys: tuple[str, ...]
    required_keys: frozenset[str]
    schema_defaults: dict[str, Any]
    outputs: frozenset[str]
    events: frozenset[str]
    requires: tuple[str, ...]
    budget_ms: int | None
    idempotent: bool


@dataclass(frozen=True, slots=True)
class BlockPlan:
    """One block, precomputed.

    Attributes:
        node: the node that holds the block.
        block: the block id.
        capability: the plan of the block's worker.
        actions: short event -> route (``on_signal`` normalised with ``signal_event``).
        fail_default: the ``SIGNAL:FAIL_DEFAULT`` route, if any.
        has_transitions: whether the block declares any transition at all.
        next_block: the next block in the node's declaration order, ``None`` for the last.
        merge: the parsed ``payload_merge_strategy``; ``None`` when it is just ``all``.
        text_segments: instruction index -> the ``text:T`` segment it appends.
        params: block-local inputs.
        artifacts: the primary artifact's paths.
        budget_ms: the step budget of the block's own step.
        contract: the block/worker contract layer (the same for every step of the block).
        inputs: the own step's input keys in the capability's order, each with what the
            document fixes for it (its block param, else the node's static memory) or a marker
            that the run's context is asked (read by the usual step, of a node not called:
            ``engine._steps.fixed_inputs``).
    """

    node: str
    block: str
    capability: CapabilityPlan
    actions: dict[str, Route]
    fail_default: Route | None
    has_transitions: bool
    next_block: str | None
    merge: tuple[MergeInstruction, ...] | None
    text_segments: dict[int, Segment]
    params: dict[str, Any]
    artifacts: list[str]
    budget_ms: int | None
    contract: BlockContract
    inputs: tuple[tuple[str, Any], ...]


@dataclass(frozen=True, slots=True)
class NodePlan:
    """One node: its entry, its memory, its boundary and its blocks."""

    id: str
    entry_block: str
    context_inheritance: bool
    static_memory: dict[str, Any]
    blocks: dict[str, BlockPlan]


@dataclass(frozen=True, slots=True)
class CompiledWorkflow:
    """A manifest compiled against a catalog; immutable and shared by every run of it.

    Treat the dictionaries as read-only: the engine hands some of them (static memory, block
    params) to steps without copying.

    Attributes:
        manifest: the manifest.
        catalog: capability id -> metadata.
        defaults: daemon-wide input defaults (layer 4 of input resolution).
        manifest_hash: put into every step's system metadata.
        worktree: put into every step's system metadata.
        max_steps: a run that would begin more steps fails (guards endless JUMP loops).
        max_call_depth: a CALL that would push more return addresses fails the run (guards
            endless recursion, whose every step would walk the whole stack).
        nodes: node id -> plan.
        capabilities: capability id -> plan, for every worker and prerequisite.
        memories: merged static memories by call chain (``engine._steps.inherited_memory``).
    """

    manifest: WorkflowManifest
    catalog: dict[str, CapabilityMetadata]
    defaults: dict[str, Any]
    manifest_hash: str
    worktree: str
    max_steps: int
    nodes: dict[str, NodePlan]
    capabilities: dict[str, CapabilityPlan]
    max_call_depth: int = MAX_CALL_DEPTH
    memories: MemoryCache = field(default_factory=MemoryCache, compare=False, repr=False)
    ended: EndedEngine = field(init=False, compare=False, repr=False)  # what an ended run keeps instead

    #: The engine contract's kind (``RunEngine``).
    kind: ClassVar[str] = "workflow"

    def __post_init__(self) -> None:
        object.__setattr__(self, "ended", EndedEngine(self.kind, self.name))

    @property
    def name(self) -> str:
        """The manifest's name (for logs and run lists)."""
        return self.manifest.name

    def new_run(self, run_id: str) -> RunState:
        """Return the state of a run that has not been submitted yet (``RunEngine``)."""
        return RunState(run_id=run_id)  # ``new_run`` in line: once per run

    #: Apply ``fact`` to ``state`` in place; return the commands (``RunEngine``). The engine's
    #: function itself (``_advance.advance(workflow, state, fact)``), so ``workflow.advance``
    #: is bound to it with no method of ours in between: it runs for every fact.
    advance = _advance

    def in_flight(self, state: RunState) -> list[Dispatch]:
        """The run's one pending Dispatch, if any (``RunEngine``); none while it waits on an
        answer (its step is not in flight)."""
        pending = state.pending
        return [] if pending is None or state.suspension is not None else [pending.dispatch]

    def suspensions(self, state: RunState) -> list[Suspension]:
        """The question the run waits on, if any (``RunEngine``)."""
        return [] if state.suspension is None else [state.suspension]

    def uses(self) -> Collection[str]:
        """The capabilities its blocks name and their prerequisites (``RunEngine``): the keys
        of ``capabilities``, not ``catalog`` (the whole catalogue it was compiled against)."""
        return self.capabilities.keys()

    def block(self, node: str, block: str) -> BlockPlan:
        """Return the plan of ``block`` of ``node``.

        Raises:
            KeyError: when there is no such block.
        """
        return self.nodes[node].blocks[block]


def compile_workflow(
    manifest: WorkflowManifest,
    catalog: Mapping[str, CapabilityMetadata],
    *,
    defaults: Mapping[str, Any] = {},  # noqa: B006 - read, never mutated; copied below
    manifest_hash: str = "",
    worktree: str = "",
    max_steps: int = 100_000,
    max_call_depth: int = MAX_CALL_DEPTH,
) -> CompiledWorkflow:
    """Check ``manifest`` against ``catalog`` and precompute everything a run needs.

    Args:
        manifest: a manifest, as ``protocols.manifest_from_data`` returns it or built in code.
        catalog: capability id -> metadata of every capability that may run.
        defaults: daemon-wide input defaults.
        manifest_hash: identifies the manifest in every step's system metadata.
        worktree: the worktree path put in every step's system metadata.
        max_steps: the most steps one run may begin.
        max_call_depth: the most return addresses a run's stack may hold.

    Raises:
        ManifestError: listing every problem with its path: a structural one (a manifest
            built in code, see ``protocols.manifest.structure_problems``); else a worker or
            prerequisite no capability provides, a signal the worker never emits,
            prerequisites that form a cycle (path: the block's ``worker``).
        ValueError: when ``max_steps`` or ``max_call_depth`` < 1.
    """
    if max_steps < 1:
        raise ValueError("max_steps must be >= 1")
    if max_call_depth < 1:
        raise ValueError("max_call_depth must be >= 1")
    problems = structure_problems(manifest)  # a manifest built in code skipped the loader's checks
    if problems:
        raise ManifestError(problems)
    catalog = dict(catalog)
    problems = check_workflow_capabilities(manifest, catalog)
    closures: dict[str, tuple[str, ...]] = {}
    for node_id, node in manifest.nodes.items():
        for block_id, block in node.blocks.items():
            if block.worker not in catalog:
                continue  # already reported
            found = _closure(block.worker, catalog)
            if isinstance(found, str):
                problems.append(Problem(path=f"nodes.{node_id}.blocks.{block_id}.worker", message=found))
            else:
                closures[block.worker] = found
    if problems:
        raise ManifestError(problems)

    plans: dict[str, CapabilityPlan] = {}
    for worker, closure in closures.items():
        for cap_id in (*closure, worker):
            if cap_id not in plans:
                # A prerequisite's closure is part of its dependant's, so it is sound too.
                own = _closure(cap_id, catalog)
                plans[cap_id] = capability_plan(catalog[cap_id], own if isinstance(own, tuple) else ())
    nodes = {node_id: _node_plan(node_id, node, plans) for node_id, node in manifest.nodes.items()}
    return CompiledWorkflow(
        manifest=manifest,
        catalog=catalog,
        defaults=dict(defaults),
        manifest_hash=manifest_hash,
        worktree=worktree,
        max_steps=max_steps,
        nodes=nodes,
        capabilities=plans,
        max_call_depth=max_call_depth,
    )


def _closure(cap_id: str, catalog: Mapping[str, CapabilityMetadata]) -> tuple[str, ...] | str:
    """The transitive ``requires`` of ``cap_id`` in run order, or the problem found (a message)."""
    graph: dict[str, list[str]] = {}
    todo = [cap_id]
    while todo:
        current = todo.pop()
        if current in graph:
            continue
        requires = list(catalog[current].requires)
        for req in requires:
            if req not in catalog:
                # A direct requirement of the worker is reported by check_workflow_capabilities.
                if current == cap_id:
                    return ()
                return f"{cap_id} requires {req!r} (through {current}), which no capability provides"
        graph[current] = requires
        todo.extend(reversed(requires))
    try:
        order = list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        cycle = " -> ".join(reversed(exc.args[1]))
        return f"{cap_id}: requires form a cycle: {cycle}"
    order.remove(cap_id)
    return tuple(order)


def capability_plan(meta: CapabilityMetadata, closure: tuple[str, ...]) -> CapabilityPlan:
    """Precompute what every step of capability ``meta`` needs (input keys, required keys,
    schema defaults, the step budget); ``closure`` is its prerequisites in run order."""
    props = meta.input_schema.get("properties", {})
    required = meta.required_inputs
    keys = tuple(props) + tuple(k for k in required if k not in props)
    schema_defaults = {k: p["default"] for k, p in props.items() if isinstance(p, dict) and "default" in p}
    budget = None
    if meta.timeout_ms is not None:
        r = meta.retry
        worst = math.inf
        if r.max_retries <= _MAX_RETRIES_COUNTED and all(math.isfinite(v) for v in (r.initial_ms, r.multiplier, r.max_ms, r.jitter)):
            try:
                worst = worst_case_step_ms(r, meta.timeout_ms)
            except OverflowError:  # a multiplier raised to the retries' power
                pass
        budget = math.ceil(worst) + _DISPATCH_SLACK_MS if worst < _MAX_BUDGET_MS else _MAX_BUDGET_MS
    return CapabilityPlan(
        id=meta.id,
        meta=meta,
        prefix=meta.id + ".",
        input_keys=keys,
        required_keys=frozenset(required),
        schema_defaults=schema_defaults,
        outputs=frozenset(meta.outputs),
        events=meta.all_events,
        requires=closure,
        budget_ms=budget,
        idempotent=meta.idempotent,
    )


def _node_plan(node_id: str, node: Any, plans: Mapping[str, CapabilityPlan]) -> NodePlan:
    order = list(node.blocks)
    blocks: dict[str, BlockPlan] = {}
    for index, (block_id, block) in enumerate(node.blocks.items()):
        cap = plans[block.worker]
        actions: dict[str, Route] = {}
        fail_default = None
        for transition in block.transitions:
            route = Route(transition.action, parse_action(transition.action))
            if transition.on_signal == FAIL_DEFAULT:
                fail_default = route
            else:
                actions[signal_event(block.worker, transition.on_signal)] = route
        strategy = block.payload_merge_strategy or ["all"]
        merge = None
        texts: dict[int, Segment] = {}
        if strategy != ["all"]:
            merge = tuple(parse_merge_instruction(text) for text in strategy)
            texts = {i: Segment(f"text:{i}", "INSTRUCTION", m.arg) for i, m in enumerate(merge) if m.kind == "text"}
        blocks[block_id] = BlockPlan(
            node=node_id,
            block=block_id,
            capability=cap,
            actions=actions,
            fail_default=fail_default,
            has_transitions=bool(block.transitions),
            next_block=order[index + 1] if index + 1 < len(order) else None,
            merge=merge,
            text_segments=texts,
            params=block.params,
            artifacts=block.artifacts,
            budget_ms=block.timeout_ms if block.timeout_ms is not None else cap.budget_ms,
            contract=BlockContract(node_id, block_id, block.worker, block.instructions),
            inputs=fixed_inputs(cap, block.params, node.static_memory),
        )
    return NodePlan(
        id=node_id,
        entry_block=node.entry_block,
        context_inheritance=node.context_inheritance,
        static_memory=node.static_memory,
        blocks=blocks,
    )


def new_run(workflow: CompiledWorkflow, run_id: str) -> RunState:
    """The state of a run of ``workflow`` not submitted yet (feed it :class:`RunSubmitted`);
    ``workflow`` is not read today (a later version may size the state from it)."""
    return RunState(run_id=run_id)
