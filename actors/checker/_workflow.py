"""The findings of a workflow manifest: its structure, its capabilities and its contract.

Structure and capability problems come from the loader's own checks (so ``check`` and ``run``
never disagree on them); the contract findings come from the exploration of every control state
(:mod:`._explore`), each with the run that shows it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.events import PREREQUISITE_FAILED, is_success
from ontoflow.protocols.manifest import WorkflowManifest, check_workflow_capabilities

from ontoflow.actors.checker import _explore
from ontoflow.actors.checker._explore import Ctrl, Exploration, explore, inherited, missing_keys
from ontoflow.actors.checker._paths import PathFinder, format_step, reaches_end, recursive_calls
from ontoflow.actors.checker._model import BlockModel, Model, build_model
from ontoflow.actors.checker._report import ERROR, WARNING, Finding
from ontoflow.actors.checker._schema import declared_contradiction, literal_problem

__all__ = ["check_workflow"]


def check_workflow(
    manifest: WorkflowManifest, catalog: Mapping[str, CapabilityMetadata]
) -> tuple[list[Finding], Exploration]:
    """Every capability and contract finding of a (possibly partly loaded) manifest.

    Returns:
        The findings (not sorted) and the exploration they came from (for ``graph``).
    """
    findings = [Finding(kind="capability", severity=ERROR, path=p.path, message=p.message)
                for p in check_workflow_capabilities(manifest, catalog)]
    model = build_model(manifest, catalog)
    findings.extend(_prerequisites(model))
    try:
        return _contract(model, findings)
    except RecursionError:
        # CALLs that return from last blocks nest the analysis of returns as deep as the
        # chain of calls: thousands of nested CALLs were a RecursionError traceback. The
        # document cannot be proved, so it is refused, saying why (nothing is cut silently).
        findings.append(Finding(kind="analysis-limit", severity=ERROR, path="nodes", message=_TOO_DEEP))
        return findings, Exploration(model, None, frozenset(manifest.inputs))


#: Why a manifest whose CALLs nest past what the analysis follows is refused.
_TOO_DEEP = ("the analysis stopped: CALLs nest deeper than the checker follows (a few hundred levels), "
             "so this workflow cannot be proved; flatten the chain of CALLs")


def _contract(model: Model, findings: list[Finding]) -> tuple[list[Finding], Exploration]:
    """Explore ``model`` and add its contract findings to ``findings``."""
    exploration = explore(model)
    if exploration.start is None:
        return findings, exploration
    if exploration.truncated:
        # Unproved is refused, as CALLs nested too deep are: a run may take a path no state
        # explored. What was not reached is unknown, not unreachable (those findings, and
        # no-exit's, would be false); what was found on the explored paths holds.
        findings.append(Finding(kind="analysis-limit", severity=ERROR, path="nodes", message=(
            f"the analysis stopped after {exploration.budget:,} control states ({_explore.STATE_FLOOR:,} and one "
            "a block; CALLs with inherited context multiply a node's states by its caller chains) or "
            f"{_explore.MAX_EDGES:,} events followed from them (a capability declaring hundreds), so this "
            "workflow cannot be proved; "
            "fewer inheriting CALL sites, or context_inheritance: false on shared nodes, keep it small")))
    seen: set[Any] = set()
    paths = _Paths(exploration)
    unrouted: dict[str, tuple[str, list[str]]] = {}
    for ctrl, (keys, wins) in exploration.values.items():
        b = model.blocks[(ctrl[0], ctrl[1])]
        _state_findings(exploration, paths, ctrl, b, keys, wins, seen, findings, unrouted)
    findings.extend(_unrouted_rest(unrouted))
    findings.extend(_recursion(exploration, paths))
    findings.extend(_completing_calls(exploration, paths))
    if not exploration.truncated:
        findings.extend(_no_exit(exploration, paths))
        findings.extend(_unreachable(exploration))
    return findings, exploration


#: How many states the searches for counterexamples avoiding a key may visit in all (each
#: visits every state once). One search per missing key made a document of 5,000 blocks
#: missing 1,000 keys a 51 s check (a daemon checks a submit in its loop); past the budget a
#: finding stands, its counterexample says it was not searched.
SEARCH_BUDGET = 100_000

#: The counterexample of a finding past :data:`SEARCH_BUDGET`.
_NOT_SEARCHED = ("... (counterexample not searched: so many keys are missing that the search budget "
                 "went to the findings before; fix those first)")


#: The unrouted events of one block that get a finding each, with its run; the block's others are
#: one finding that counts them and names the first :data:`_REST_NAMED`. A capability of 2,000
#: events in a 500-block document made 250,000 findings (390 MB of report, 12 s, 1.6 GB).
UNROUTED_SHOWN = 10

#: The events a block's finding for the rest of its unrouted events names.
_REST_NAMED = 20


#: How many steps the counterexamples of one check may hold in all (each up to 50). 4,000 CALLs
#: of one node, each block with six unrouted events, made 24,000 findings of 50 steps each
#: (1.2 million lines, 2 s); past the budget a finding stands, its counterexample says so.
STEPS_BUDGET = 100_000

#: The counterexample of a finding past :data:`STEPS_BUDGET`.
_NOT_WRITTEN = "... (counterexample not written: the findings before it used the budget for them; fix those first)"


class _Paths:
    """Counterexample finders, one per key asked about, built on first use (a document with no
    finding to illustrate, the common submit, searches no path at all)."""

    def __init__(self, ex: Exploration) -> None:
        self.ex = ex
        self._any: PathFinder | None = None
        self._by_key: dict[str, PathFinder] = {}
        self._spent = 0
        self._to: dict[Ctrl, list[str]] = {}
        self._steps = 0  # steps written into counterexamples so far (see STEPS_BUDGET)

    @property
    def any(self) -> PathFinder:
        """The finder of shortest runs to any state, avoiding nothing."""
        if self._any is None:
            self._any = PathFinder(self.ex)
        return self._any

    def to(self, ctrl: Ctrl) -> list[str]:
        found = self._to.get(ctrl)  # a block with six unrouted events: one run to it, not six
        if found is None:
            found = self._to[ctrl] = self._budgeted(lambda: self.any.path(ctrl))
        return found

    def avoiding(self, ctrl: Ctrl, key: str) -> list[str]:
        finder = self._by_key.get(key)
        if finder is None:
            states = len(self.ex.values)
            if self._spent + states > SEARCH_BUDGET:
                return [_NOT_SEARCHED]
            self._spent += states
            finder = self._by_key[key] = PathFinder(self.ex, key)
        return self._budgeted(lambda: finder.path(ctrl)) if finder.reached(ctrl) else self.to(ctrl)

    def _budgeted(self, walk: Any) -> list[str]:
        if self._steps >= STEPS_BUDGET:
            return [_NOT_WRITTEN]
        steps = walk()
        self._steps += len(steps)
        return steps


def _blocks_of(states: Any) -> set[tuple[str, str]]:
    return {(c[0], c[1]) for c in states}


def _prerequisites(model: Model) -> list[Finding]:
    out: list[Finding] = []
    for (node, block), b in model.blocks.items():
        cap = b.cap
        if cap is None:
            continue
        if cap.problem and f"(of {cap.id})" not in cap.problem:
            out.append(Finding(kind="prerequisite", severity=ERROR, path=f"{b.path}.worker", message=f"{cap.id}: {cap.problem}"))
        for req in cap.closure:
            pre = model.caps.get(req)
            if pre is not None and not any(is_success(e) for e in pre.events):
                out.append(Finding(
                    kind="prerequisite", severity=ERROR, path=f"{b.path}.worker",
                    message=f"{cap.id} requires {req}, which declares no success event ({', '.join(pre.events) or 'none'}): "
                            f"it can never succeed, so this block always ends with {PREREQUISITE_FAILED}",
                ))
    return out


def _state_findings(
    ex: Exploration, paths: _Paths, ctrl: Ctrl, b: BlockModel, keys: frozenset[str], wins: frozenset[str],
    seen: set[Any], findings: list[Finding], unrouted: dict[str, tuple[str, list[str]]],
) -> None:
    model = ex.model
    memory = inherited(model, ctrl[0], ctrl[2])
    for cap_id, key in missing_keys(model, b, keys, wins, memory):
        if ("missing", b.path, cap_id, key) in seen:
            continue
        seen.add(("missing", b.path, cap_id, key))
        steps = paths.avoiding(ctrl, key)
        own = b.cap is None or cap_id == b.cap.id
        who = cap_id if own else f"{cap_id} (a prerequisite of {b.cap.id})"
        # The block's params feed its own worker only (the engine hands a prerequisite none):
        # naming them for a prerequisite sent users to add a key where it is never read.
        where = "not in the block's params, " if own else "a prerequisite does not see the block's params; not in "
        # A block that routes ``invalid`` by name has said what happens then: the author
        # handles the missing key, so it is worth a warning, not a refusal.
        handled = "invalid" in b.routes
        findings.append(Finding(
            kind="missing-input", severity=WARNING if handled else ERROR, path=f"{b.path}.worker",
            message=f"required input {key!r} of {who} is not provided on every path: {where}"
                    f"the static memory it inherits, the outputs that must have run, the declared inputs or a schema default"
                    + ("; the block routes 'invalid', so the run goes on there" if handled else ""),
            counterexample=[*steps, f"{ctrl[0]}.{ctrl[1]}: {cap_id} starts without {key!r} -> invalid"],
        ))
    _type_findings(ex, paths, ctrl, b, keys, memory, seen, findings)
    # A set, and the path made once: ``in`` the events' tuple for each edge was quadratic in a
    # capability's events (2,000 events: 3.9 s of a 4.9 s check).
    declared = frozenset(b.cap.events) if b.cap is not None else frozenset()
    block_path = b.path
    for edge in ex.edges.get(ctrl, ()):
        route = edge.route
        if edge.end == "no-transition" and b.cap is not None and (edge.event in declared or edge.event == PREREQUISITE_FAILED):
            if ("unrouted", block_path, edge.event) not in seen:
                seen.add(("unrouted", block_path, edge.event))
                events = unrouted.setdefault(b.path, (b.worker, []))[1]
                events.append(edge.event)
                if len(events) > UNROUTED_SHOWN:
                    continue  # counted in the block's one finding for the rest (_unrouted_rest)
                findings.append(Finding(
                    kind="unrouted-event", severity=WARNING, path=f"{b.path}.transitions",
                    message=f"event {edge.event!r} of {b.worker} is routed by no transition and no SIGNAL:FAIL_DEFAULT: "
                            "a run that gets it fails with 'no transition'",
                    counterexample=[*paths.to(ctrl), format_step(ctrl, edge, model)],
                ))
        elif edge.end == "return" and ctrl[3] and ctrl[0] in model.called and route is not None:
            path = f"{b.path}.transitions[{route.index}].action"
            if ("ret", path) not in seen:
                seen.add(("ret", path))
                callers = _callers_of(model, ctrl[0])
                findings.append(Finding(
                    kind="return-empty-stack", severity=ERROR, path=path,
                    message=f"node {ctrl[0]!r} is CALLed (by {', '.join(callers)}) but this RETURN is also reached with "
                            "an empty return stack (as the start node), where it completes the run instead of returning "
                            "to a caller",
                    counterexample=[*paths.to(ctrl), format_step(ctrl, edge, model)],
                ))


def _unrouted_rest(unrouted: dict[str, tuple[str, list[str]]]) -> list[Finding]:
    """One finding per block with more than :data:`UNROUTED_SHOWN` unrouted events: how many
    more there are, the first of them named (each fails a run as the ones shown do)."""
    out: list[Finding] = []
    for path, (worker, events) in unrouted.items():
        rest = events[UNROUTED_SHOWN:]
        if not rest:
            continue
        named = ", ".join(repr(e) for e in rest[:_REST_NAMED])
        more = f" and {len(rest) - _REST_NAMED:,} more" if len(rest) > _REST_NAMED else ""
        out.append(Finding(
            kind="unrouted-event", severity=WARNING, path=f"{path}.transitions",
            message=f"{len(rest):,} more events of {worker} (past the {UNROUTED_SHOWN} shown above) are routed by no "
                    f"transition and no SIGNAL:FAIL_DEFAULT: {named}{more}; a run that gets one fails with 'no transition'",
        ))
    return out


def _recursion(ex: Exploration, paths: _Paths) -> list[Finding]:
    out: list[Finding] = []
    reported: set[str] = set()
    for site, edge in recursive_calls(ex):
        if edge.route is None:
            continue
        path = f"nodes.{site[0]}.blocks.{site[1]}.transitions[{edge.route.index}].action"
        if path in reported:
            continue
        reported.add(path)
        out.append(Finding(
            kind="unbounded-recursion", severity=ERROR, path=path,
            message=f"{edge.route.text} can nest without bound: the node it enters can CALL back into "
                    f"{site[0]!r} before returning, so the return stack can grow forever",
            counterexample=[*paths.to(site), format_step(site, edge, ex.model)],
        ))
    return out


def _completing_calls(ex: Exploration, paths: _Paths) -> list[Finding]:
    out: list[Finding] = []
    reported: set[str] = set()
    for site, call, exit_state, exit_edge in ex.completing_calls:
        if exit_edge.route is None:
            continue
        if exit_edge.end == "return":
            path = f"nodes.{exit_state[0]}.blocks.{exit_state[1]}.transitions[{exit_edge.route.index}].action"
        else:  # a nested last-block CALL returned through this one
            path = f"nodes.{site[0]}.blocks.{site[1]}.transitions[{call.route.index}].action"  # type: ignore[union-attr]
        if path in reported:
            continue
        reported.add(path)
        out.append(Finding(
            kind="return-empty-stack", severity=WARNING, path=path,
            message=f"this RETURN comes back to {site[0]}.{site[1]}, whose CALL is in the last block of its node: "
                    "there is nothing to return to, so the stack empties and the run completes",
            counterexample=[*paths.to(exit_state),
                            f"{format_step(exit_state, exit_edge, ex.model)} (nothing after {site[0]}.{site[1]}: "
                            "stack empty, run completes)"],
        ))
    return out


def _type_findings(
    ex: Exploration, paths: _Paths, ctrl: Ctrl, b: BlockModel, keys: frozenset[str], memory: dict[str, Any], seen: set[Any],
    findings: list[Finding],
) -> None:
    caps = [b.cap] if b.cap is not None else []
    caps += [ex.model.caps[r] for r in (b.cap.closure if b.cap else ()) if r in ex.model.caps]
    inputs = ex.model.manifest.inputs
    for cap in caps:
        own = cap is b.cap
        for key, schema in cap.properties.items():
            declared = False  # a value given (params, static memory), or a declared input's schema
            if own and key in b.params:
                value, where = b.params[key], f"{b.path}.params.{key}"
            elif key in memory:
                value, where = memory[key]
            elif key in inputs and key in keys:
                value, where, declared = inputs[key], f"inputs.{key}", True
            else:
                continue
            # The value at ``where`` and the schema of ``key`` in ``cap`` are the same at every
            # block and in every context: checked once (a 100,000-value enum was validated
            # at each of 500 consuming blocks: 34 s).
            if ("type", where, cap.id, key) in seen:
                continue
            seen.add(("type", where, cap.id, key))
            problem = declared_contradiction(value, schema) if declared else literal_problem(value, schema)
            if problem is None:
                continue
            findings.append(Finding(
                kind="type-mismatch", severity=ERROR, path=where,
                message=f"the value given for {key!r} contradicts the schema of {cap.id} (used by {b.node}.{b.block}): {problem}",
                counterexample=paths.to(ctrl) + [f"{ctrl[0]}.{ctrl[1]}: {cap.id} gets {key!r} from {where}"],
            ))


def _callers_of(model: Model, node: str) -> list[str]:
    """The blocks that CALL ``node``, found once per node (a scan of every block for every
    RETURN finding was quadratic)."""
    key = ("callers", node)
    found = model.memory.get(key)
    if found is None:
        found = model.memory[key] = sorted(
            f"{n}.{blk}" for (n, blk), m in model.blocks.items()
            if any(r.text == f"CALL:{node}" for r in (*m.routes.values(), m.fail_default) if r))
    return found


#: The blocks a no-exit finding names (the loop may be the whole document).
_TRAP_NAMES = 20


def _no_exit(ex: Exploration, paths: _Paths) -> list[Finding]:
    good = reaches_end(ex)
    stuck = [c for c in ex.values if c not in good]
    out: list[Finding] = []
    reported: set[tuple[str, str]] = set()
    spent = 0  # states walked to name the loops: each way in walked its whole loop, 2,500 ways
    # into one loop of 2,500 blocks was a 22 s check (and 2,500 messages naming 2,500 blocks)
    for ctrl in stuck:
        link = paths.any.parent.get(ctrl)
        if link is not None and link[1] not in good:
            continue  # not where the run enters the trap
        if (ctrl[0], ctrl[1]) in reported:
            continue
        reported.add((ctrl[0], ctrl[1]))
        where = "no path from here ends the run (its loop not named: the search budget went to the findings before)"
        if spent < SEARCH_BUDGET:
            trap: set[Ctrl] = {ctrl}
            todo = [ctrl]
            while todo:
                for edge in ex.edges.get(todo.pop(), ()):
                    if edge.target is not None and edge.target not in trap:
                        trap.add(edge.target)
                        todo.append(edge.target)
            spent += len(trap)
            names = sorted(f"{n}.{b}" for n, b in _blocks_of(trap))
            more = f" and {len(names) - _TRAP_NAMES:,} more" if len(names) > _TRAP_NAMES else ""
            where = f"every event of every step leads back among {', '.join(names[:_TRAP_NAMES])}{more}"
        out.append(Finding(
            kind="no-exit", severity=ERROR, path=f"nodes.{ctrl[0]}.blocks.{ctrl[1]}",
            message=f"a run that gets here can never end: {where}",
            counterexample=paths.to(ctrl) + [f"{ctrl[0]}.{ctrl[1]}: from here no path ends the run"],
        ))
    return out


def _unreachable(ex: Exploration) -> list[Finding]:
    reached = _blocks_of(ex.values)
    out: list[Finding] = []
    for node_id, node in ex.model.manifest.nodes.items():
        blocks = [b for b in node.blocks if (node_id, b) not in reached]
        if blocks and len(blocks) == len(node.blocks):
            out.append(Finding(kind="unreachable", severity=WARNING, path=f"nodes.{node_id}",
                               message=f"no path reaches node {node_id!r}: nothing CALLs it from a reachable block"))
            continue
        for block in blocks:
            out.append(Finding(kind="unreachable", severity=WARNING, path=f"nodes.{node_id}.blocks.{block}",
                               message=f"no path reaches block {block!r}: no reachable transition JUMPs to it "
                                       "and it is not where a CALL returns"))
    return out
