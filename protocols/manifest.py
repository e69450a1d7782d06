"""Workflow manifests (seeds 000 and 002): Nodes of Blocks routed by transition tables.

The seed-002 ``workflows.json`` shape is accepted verbatim, in JSON, YAML or TOML, with two
optional additions at the top level: ``start`` names the node a run enters first (the seed
passes it to ``execute``: a manifest without it takes ``start=`` from the caller, and a
manifest with a single node starts there), and ``inputs`` declares the run's inputs (ontology
key -> JSON Schema), which the static checker counts as provided on every path. Loading is strict:
unknown fields, wrong types, unknown actions, JUMPs and CALLs to nothing and entry blocks
missing from their node are all reported, each with its path
(``nodes.main.blocks.load.transitions[1].action``).

Block fields beyond the seed (all optional): ``params`` (block-local inputs, the first layer of
the context bus), ``instructions`` (the block contract handed to the capability), ``artifacts``
(paths of the primary artifact, relative to the manifest's folder) and ``timeout_ms`` (the
step's schedule-to-close budget, overriding the one derived from the capability).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from ontoflow.protocols.actions import Action, Call, Jump, Return, parse_action
from ontoflow.protocols._manifest_refs import merge_reference_problems
from ontoflow.protocols._manifest_size import MAX_BLOCKS, MAX_TRANSITIONS, bounded, problem_count, size_problem
from ontoflow.protocols.artifact_names import artifact_problems
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.documents import decode_document
from ontoflow.protocols.errors import ManifestError, Problem, validation_problem
from ontoflow.protocols.events import ENGINE_SIGNAL_PREFIX, FAIL_DEFAULT
from ontoflow.protocols.merge_strategy import MAX_INSTRUCTIONS, parse_merge_instruction
from ontoflow.protocols.trigger import Trigger

__all__ = [
    "Action", "Block", "Call", "Jump", "MAX_BLOCKS", "MAX_CALL_DEPTH", "MAX_TRANSITIONS", "Node", "Return", "Transition",
    "Trigger", "WorkflowManifest", "check_workflow_capabilities", "decode_document", "manifest_from_data",
    "manifest_problems", "parse_action", "problem_count", "signal_event", "structure_problems",
]


# -- the manifest ---------------------------------------------------------------------------------


class Transition(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One rule of a block's table: when the step ends with ``on_signal``, do ``action``."""

    on_signal: str
    action: str


class Block(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An atomic unit of execution: one capability and its transition table."""

    worker: str
    payload_merge_strategy: list[str] = []
    transitions: list[Transition] = []
    params: dict[str, Any] = {}
    instructions: str = ""
    artifacts: list[str] = []
    timeout_ms: int | None = None
    description: str = ""


class Node(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A logical container of blocks that owns a static memory and a context boundary."""

    entry_block: str
    blocks: dict[str, Block]
    context_inheritance: bool = True
    static_memory: dict[str, Any] = {}
    description: str = ""


class WorkflowManifest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A whole workflow: its nodes, the node a run starts in and the inputs it declares.

    Attributes:
        start: the node a run enters first (always set once loaded, see ``manifest_from_data``).
        nodes: node id -> node.
        inputs: ontology key -> JSON Schema of a run input the workflow expects; the checker
            counts a declared input as provided on every path and checks its type and enum
            against each consumer's schema.
    """

    start: str
    nodes: dict[str, Node]
    name: str = ""
    description: str = ""
    version: str = "1"
    triggers: list[Trigger] = []
    inputs: dict[str, dict[str, Any]] = {}


#: The longest ``timeout_ms`` a block may give: ten years (as a submit's deadline).
_MAX_TIMEOUT_MS = 10 * 365 * 86_400_000

#: The most return addresses a run's stack holds: a CALL that would nest deeper fails the run
#: (as a stack overflow). ``ontoflow check`` follows caller chains this deep and refuses deeper.
MAX_CALL_DEPTH = 1_000


class _RawManifest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    nodes: dict[str, Any]
    start: str | msgspec.UnsetType = msgspec.UNSET  # absent (UNSET) is told from "" (refused); null is no name
    name: str = ""
    description: str = ""
    version: str = "1"
    triggers: list[Trigger] = []
    inputs: dict[str, dict[str, Any]] = {}


class _RawNode(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    entry_block: str
    blocks: dict[str, Any]
    context_inheritance: bool = True
    static_memory: dict[str, Any] = {}
    description: str = ""


def _convert(data: Any, kind: type, path: str, problems: list[Problem]) -> Any:
    """``msgspec.convert`` with the error's ``$`` path rewritten to ``path``; None on error."""
    try:
        return msgspec.convert(data, kind)
    except msgspec.ValidationError as exc:
        problems.append(validation_problem(exc, path))
        return None


def manifest_from_data(
    data: Any,
    *,
    source: str = "",
    start: str | None = None,
    catalog: Mapping[str, CapabilityMetadata] | None = None,
    recorded: bool = False,
) -> WorkflowManifest:
    """Validate plain data as a workflow manifest and return it typed.

    Every problem is collected before raising, so a user sees them all at once: with
    ``catalog``, the capability problems (unknown workers, signals never emitted, missing
    prerequisites) of every block that parsed come in the same report as the structure's.

    Args:
        data: the decoded document.
        source: where it came from (for the error's heading).
        start: the node to start in (``--start NODE``); it overrides the document's ``start``.
            Without either, a manifest with a single node starts there.
        catalog: capability id -> metadata, to report capability problems at once.
        recorded: a document journaled by an earlier version, compiled again: rules newer than
            some journals (ids, merge references, the transitions' bound) are not applied to it.

    Raises:
        ManifestError: listing each problem with its path.
    """
    manifest, problems = _load(data, start, catalog, ids=not recorded)
    if problems or manifest is None:
        raise ManifestError(problems, source=source)
    return manifest


def manifest_problems(
    data: Any,
    *,
    start: str | None = None,
    catalog: Mapping[str, CapabilityMetadata] | None = None,
) -> tuple[WorkflowManifest | None, list[Problem]]:
    """Like :func:`manifest_from_data`, but return ``(manifest, problems)`` instead of raising.

    The manifest holds whatever parsed (blocks with a bad transition are kept, the transition
    dropped), so a checker can go on analysing it; it is ``None`` when the top level did not
    parse at all.
    """
    return _load(data, start, catalog)


def _load(
    data: Any, start: str | None, catalog: Mapping[str, CapabilityMetadata] | None, *, ids: bool = True
) -> tuple[WorkflowManifest | None, list[Problem]]:
    problems: list[Problem] = []
    if not isinstance(data, dict):
        return None, [Problem(path="", message=f"expected a map at the top level, got {type(data).__name__}")]
    raw = _convert(data, _RawManifest, "", problems)
    if raw is None:
        return None, problems
    too_big = size_problem(raw.nodes, transitions=ids)
    if too_big is not None:  # refused before any check: every check and finding grows with the size
        return None, [too_big]
    nodes: dict[str, Node] = {}
    for node_id, node_data in raw.nodes.items():
        npath = f"nodes.{node_id}"
        raw_node = _convert(node_data, _RawNode, npath, problems)
        if raw_node is None:
            continue
        for name, at in ((node_id, "nodes"), *((b, f"{npath}.blocks") for b in raw_node.blocks)):  # no '.', ':', look-alike
            if ids and not (name.isascii() and name.replace("_", "a").replace("-", "a").isalnum() and len(name) <= 128):
                problems.append(Problem(path=at, message=f"id {ascii(name[:64])} must be 1-128 letters, digits, _ or -"))
        blocks: dict[str, Block] = {}
        for block_id, block_data in raw_node.blocks.items():
            block = _convert(block_data, Block, f"{npath}.blocks.{block_id}", problems)
            if block is not None:
                blocks[block_id] = block
        nodes[node_id] = Node(
            entry_block=raw_node.entry_block,
            blocks=blocks,
            context_inheritance=raw_node.context_inheritance,
            static_memory=raw_node.static_memory,
            description=raw_node.description,
        )
        if not raw_node.blocks:
            problems.append(Problem(path=f"{npath}.blocks", message="a node needs at least one block"))
        elif raw_node.entry_block not in raw_node.blocks:
            problems.append(Problem(path=f"{npath}.entry_block", message=f"block {raw_node.entry_block!r} is not in node {node_id!r}"))
    # ``--start "$NODE"`` with NODE unset ran the document's start node (or its only node).
    empty = [Problem(path=p, message="must name a node (it is empty)") for v, p in ((start, "--start"),
             (raw.start, "start")) if v == "" and ids]
    problems += empty
    first = start or raw.start or ""
    if not raw.nodes:
        problems.append(Problem(path="nodes", message="a manifest needs at least one node"))
    elif not first and not empty:
        if len(raw.nodes) == 1:
            first = next(iter(raw.nodes))
        else:
            problems.append(
                Problem(path="start", message="required key is missing: name the node a run starts in (or pass --start NODE)")
            )
    elif first not in raw.nodes and not empty:
        where = "start" if not start else "--start"
        problems.append(Problem(path=where, message=f"node {first!r} does not exist"))
    block_home = {b: n for n, node in nodes.items() for b in node.blocks}
    cut = [(node, block_id, block) for node_id, node in nodes.items() for block_id, block in node.blocks.items()
           if not _check_block(node_id, node, block_id, block, nodes, block_home, problems)]
    if ids:  # not for a journaled document: it ran before, refused now it would be lost
        problems += merge_reference_problems(nodes, raw.nodes)
    manifest = WorkflowManifest(
        start=first,
        nodes=nodes,
        name=raw.name,
        description=raw.description,
        version=raw.version,
        triggers=raw.triggers,
        inputs=raw.inputs,
    )
    if catalog is not None:  # before the cut below: its paths count every transition of a block
        problems.extend(check_workflow_capabilities(manifest, catalog))
    for node, block_id, block in cut:  # kept for the checker, without the transitions it cannot follow
        node.blocks[block_id] = msgspec.structs.replace(block, transitions=[t for t in block.transitions
                                                                            if _followable(t, node, nodes)])
    return manifest, bounded(problems)


def structure_problems(manifest: WorkflowManifest) -> list[Problem]:
    """The structural problems of a typed manifest, each with its path, as loading reports them.

    A start node or entry block that does not exist, a node without blocks, an action that does
    not parse or leads nowhere, a bad merge instruction, a bad timeout or artifact path.
    :func:`manifest_from_data` never returns a manifest that has any, but msgspec Structs check
    nothing as they are made: a manifest built in code reached the engine with a CALL into a
    missing entry block, a ``KeyError`` in the middle of a run. ``compile_workflow`` checks
    every manifest with this.
    """
    problems: list[Problem] = []
    nodes = manifest.nodes
    if not nodes:
        problems.append(Problem(path="nodes", message="a manifest needs at least one node"))
    elif manifest.start not in nodes:
        problems.append(Problem(path="start", message=f"node {manifest.start!r} does not exist"))
    block_home = {b: n for n, node in nodes.items() for b in node.blocks}
    for node_id, node in nodes.items():
        if not node.blocks:
            problems.append(Problem(path=f"nodes.{node_id}.blocks", message="a node needs at least one block"))
        elif node.entry_block not in node.blocks:
            problems.append(Problem(path=f"nodes.{node_id}.entry_block",
                                    message=f"block {node.entry_block!r} is not in node {node_id!r}"))
        for block_id, block in node.blocks.items():
            _check_block(node_id, node, block_id, block, nodes, block_home, problems)
    return problems


def _followable(transition: Transition, node: Node, nodes: Mapping[str, Node]) -> bool:
    """Whether a transition's action parses and names a block or node that exists."""
    try:
        action = parse_action(transition.action)
    except ValueError:
        return False
    if isinstance(action, Jump):
        return action.block in node.blocks
    if isinstance(action, Call):
        return action.node in nodes
    return True


def _check_block(
    node_id: str,
    node: Node,
    block_id: str,
    block: Block,
    nodes: Mapping[str, Node],
    block_home: Mapping[str, str],
    problems: list[Problem],
) -> bool:
    """Append the block's problems; True when it had none."""
    before = len(problems)
    bpath = f"nodes.{node_id}.blocks.{block_id}"
    if not block.worker:
        problems.append(Problem(path=f"{bpath}.worker", message="must name a capability id"))
    if block.timeout_ms is not None and not 0 < block.timeout_ms <= _MAX_TIMEOUT_MS:  # now + it is a 64-bit time
        problems.append(Problem(path=f"{bpath}.timeout_ms", message=f"must be > 0 and at most {_MAX_TIMEOUT_MS} (ten years)"))
    if block.artifacts:  # read from the worktree: never outside it
        problems += artifact_problems(f"{bpath}.artifacts", block.artifacts)
    strategy = block.payload_merge_strategy
    if len(strategy) > MAX_INSTRUCTIONS:  # each is run on every step: refused before any is parsed
        problems.append(Problem(path=f"{bpath}.payload_merge_strategy",
                                message=f"{len(strategy):,} instructions; a block has at most {MAX_INSTRUCTIONS}"))
        strategy = []
    for i, text in enumerate(strategy):
        try:
            parse_merge_instruction(text)
        except ValueError as exc:
            problems.append(Problem(path=f"{bpath}.payload_merge_strategy[{i}]", message=str(exc)))
    seen: dict[str, int] = {}
    for i, transition in enumerate(block.transitions):
        tpath = f"{bpath}.transitions[{i}]"
        signal = transition.on_signal
        if not signal:
            problems.append(Problem(path=f"{tpath}.on_signal", message="must not be empty"))
        elif signal.startswith(ENGINE_SIGNAL_PREFIX) and signal != FAIL_DEFAULT:
            problems.append(
                Problem(path=f"{tpath}.on_signal", message=f"names starting with SIGNAL: are reserved; only {FAIL_DEFAULT} is accepted")
            )
        key = signal_event(block.worker, signal)
        if key in seen:
            problems.append(Problem(path=f"{tpath}.on_signal", message=f"signal {signal!r} is already routed by transitions[{seen[key]}]"))
        seen.setdefault(key, i)
        try:
            action = parse_action(transition.action)
        except ValueError as exc:
            problems.append(Problem(path=f"{tpath}.action", message=str(exc)))
            continue
        if isinstance(action, Jump) and action.block not in node.blocks:
            home = block_home.get(action.block)
            entry = None if home is None else nodes[home].entry_block  # a CALL runs that, not the block
            hint = "" if home is None else f" (it is in node {home!r}: use CALL:{home})" if entry == action.block \
                else f" (it is in node {home!r}, which a CALL:{home} enters at its entry block {entry!r})"
            problems.append(
                Problem(path=f"{tpath}.action", message=f"JUMP to block {action.block!r} that does not exist in node {node_id!r}{hint}")
            )
        elif isinstance(action, Call) and action.node not in nodes:
            problems.append(Problem(path=f"{tpath}.action", message=f"CALL to node {action.node!r} that does not exist"))
    return len(problems) == before


def signal_event(worker: str, signal: str) -> str:
    """Return the short event name a transition's ``on_signal`` matches.

    ``on_signal`` may be the short event (``success``) or its full name
    (``infobim.capability.base.list_pipes.success``).
    """
    prefix = worker + "."
    return signal[len(prefix):] if signal.startswith(prefix) else signal


def check_workflow_capabilities(
    manifest: WorkflowManifest, catalog: Mapping[str, CapabilityMetadata]
) -> list[Problem]:
    """Check a valid manifest against the capabilities that will run it.

    Reports blocks whose ``worker`` no capability provides, signals the capability can never
    emit (a typo would otherwise silently fall through to the fallback), and ``requires`` that
    no capability provides.
    """
    problems: list[Problem] = []
    for node_id, node in manifest.nodes.items():
        for block_id, block in node.blocks.items():
            bpath = f"nodes.{node_id}.blocks.{block_id}"
            meta = catalog.get(block.worker)
            if meta is None:
                problems.append(Problem(path=f"{bpath}.worker", message=f"no capability {block.worker!r} is loaded"))
                continue
            events = meta.all_events
            for i, transition in enumerate(block.transitions):
                if transition.on_signal == FAIL_DEFAULT:
                    continue
                event = signal_event(block.worker, transition.on_signal)
                if event not in events:
                    problems.append(
                        Problem(
                            path=f"{bpath}.transitions[{i}].on_signal",
                            message=f"{block.worker} never emits {event!r} (it emits: {', '.join(sorted(events))})",
                        )
                    )
            for i, req in enumerate(meta.requires):
                if req not in catalog:
                    problems.append(
                        Problem(path=f"{bpath}.worker", message=f"{block.worker} requires {req!r}, which no capability provides")
                    )
    return problems
