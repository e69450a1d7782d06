"""Exploring every state a run of a manifest can be in, and what each state guarantees.

The return stack is what makes a manifest more than a finite graph: a ``CALL`` pushes its
return address (the block after the calling one, ``None`` for the last block: returning there
returns again), ``RETURN`` pops. Exploring explicit stacks is exponential in the number of call
sites, so the analysis is *interprocedural* in the manner of Reps, Horwitz and Sagiv's
tabulation: a node's body is analysed once per **context**, and a finished analysis of a
context (its exits) is reused at every call site that enters it.

A context is what a node's behaviour depends on besides the keys in the run's context: the
static memory it inherits, i.e. the chain of callers it sees through ``context_inheritance``
(``()`` for a node without inheritance), and whether it is the run's root (the start node with
an empty stack, where ``RETURN`` completes the run). A caller that appears twice in a chain
adds nothing the nearer one does not (the nearest memory wins), so chains are kept without
repeats and the contexts are finite: at most the nodes times their caller chains.

**The bound.** Nothing is cut off: every context, every state in it and every call/return
pair is explored, so the analysis is exact for what it models (every event a step can end
with is possible). Unbounded recursion is a cycle among contexts calling each other (a call
that can re-enter a context still active on the stack pumps: the steps between can repeat),
reported with the path to the call.

Over the states runs a *must* analysis: the context keys and succeeded capabilities that hold
on **every** path. Keys are only ever added to a run's context, so a path's effect is a union
("gen" sets), the meet is intersection, and a context's effect from entry to exit is one set
that every call site adds to what it had (distributivity makes that exact).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from ontoflow.protocols.events import FAILURE, INVALID, PREREQUISITE_FAILED, TIMEOUT, UNAVAILABLE, is_success
from ontoflow.protocols.manifest import Call, Jump

from ontoflow.actors.checker._budget import MAX_EDGES, MAX_STATES, STATE_FLOOR, state_budget
from ontoflow.actors.checker._model import BlockModel, Model, Route
from ontoflow.actors.orchestrator.engine import LAST_FAILURE_KEY

__all__ = [
    "CallsTooDeep", "Ctrl", "Ctx", "Edge", "Exploration", "MAX_CALL_DEPTH", "MAX_EDGES", "MAX_STATES", "STATE_FLOOR", "explore",
    "inherited", "missing_keys", "state_budget",
]

#: ``(node, caller chain, root)``.
Ctx = tuple[str, tuple[str, ...], bool]
#: ``(node, block, caller chain, root)``: a block in a context.
Ctrl = tuple[str, str, tuple[str, ...], bool]

_ALWAYS = (FAILURE, TIMEOUT, UNAVAILABLE)
_EMPTY: frozenset[str] = frozenset()
_FAILURE_KEYS = frozenset({LAST_FAILURE_KEY})

#: The longest caller chain a context may have. Each inheriting CALL copies its caller's
#: chain and memory, so a chain of thousands of nested CALLs cost time quadratic in its
#: length (4,000 nodes: 10 s); past this the analysis stops, refusing the document.
MAX_CALL_DEPTH = 1_000


class CallsTooDeep(RecursionError):
    """A caller chain longer than :data:`MAX_CALL_DEPTH` (handled as the stack's own limit)."""


@dataclass(frozen=True, slots=True)
class Edge:
    """One way out of a state.

    Attributes:
        event: the short event the step ended with.
        route: the transition taken, ``None`` when none matched.
        target: the next state for a JUMP or a CALL (the callee's entry), else ``None``.
        end: ``""`` when the run goes on; ``return`` for a RETURN; ``completed``, ``failed`` or
            ``no-transition`` when the run ends here.
        adds: context keys guaranteed after this edge.
        succeeds: capabilities guaranteed to have succeeded after this edge.
    """

    event: str
    route: Route | None
    target: Ctrl | None
    end: str
    adds: frozenset[str]
    succeeds: frozenset[str]


@dataclass(slots=True)
class Exploration:
    """Every reachable state, what it guarantees, its ways out, and how contexts connect.

    Attributes:
        values: state -> (keys, succeeded capabilities) that hold on every path into it.
        edges: state -> its ways out.
        callers: context -> the call sites (state, CALL edge) that enter it.
        exits: context -> its RETURNs: (state, RETURN edge) -> (keys, succeeded) added since
            the context's entry; a call from a last block that returns is an exit too.
        completing_calls: call sites in the root context whose callee's RETURN finds no block
            to return to (the CALL is in a last block), with the RETURN that does it.
        truncated: True when the exploration stopped at ``budget`` states (unproved).
        budget: the most states it could explore (:func:`state_budget`).
    """

    model: Model
    start: Ctrl | None
    initial_keys: frozenset[str]
    values: dict[Ctrl, tuple[frozenset[str], frozenset[str]]] = field(default_factory=dict)
    edges: dict[Ctrl, list[Edge]] = field(default_factory=dict)
    callers: dict[Ctx, dict[tuple[Ctrl, Edge], None]] = field(default_factory=dict)
    exits: dict[Ctx, dict[tuple[Ctrl, Edge], tuple[frozenset[str], frozenset[str]]]] = field(default_factory=dict)
    completing_calls: list[tuple[Ctrl, Edge, Ctrl, Edge]] = field(default_factory=list)
    truncated: bool = False
    budget: int = 0


def ctx_of(ctrl: Ctrl) -> Ctx:
    """The context a state is in."""
    return (ctrl[0], ctrl[2], ctrl[3])


def inherited(model: Model, node: str, chain: tuple[str, ...]) -> dict[str, tuple[Any, str]]:
    """The static memory a step of ``node`` sees with callers ``chain``: key -> (value, its path).

    The same walk as the engine's ``inherited_memory``; the nearest memory wins.
    """
    cached = model.memory.get((node, chain))
    if cached is not None:
        return cached
    merged: dict[str, tuple[Any, str]] = {}
    for node_id in (*chain, node):  # farthest first, so nearer nodes overwrite
        merged.update(_own_memory(model, node_id))
    model.memory[(node, chain)] = merged
    return merged


def _own_memory(model: Model, node: str) -> dict[str, tuple[Any, str]]:
    """A node's static memory, only the keys a capability reads (``Model.watched``): a node's
    memory is merged once per caller chain, and 1,000 keys no step reads made each merge cost
    a thousand times what it needs to."""
    key = ("own", node)
    found = model.memory.get(key)
    if found is None:
        watched = model.watched
        found = model.memory[key] = {k: (v, f"nodes.{node}.static_memory.{k}")
                                     for k, v in model.manifest.nodes[node].static_memory.items() if k in watched}
    return found


def callee_chain(model: Model, caller: Ctx, callee: str) -> tuple[str, ...]:
    """The chain a callee sees: its caller and the caller's chain, if it inherits; no repeats."""
    if not model.manifest.nodes[callee].context_inheritance:
        return ()
    if len(caller[1]) >= MAX_CALL_DEPTH:
        raise CallsTooDeep(f"caller chains past {MAX_CALL_DEPTH}")
    chain = (*caller[1], caller[0])
    seen: set[str] = {callee}
    kept: list[str] = []
    for node_id in reversed(chain):  # keep the nearest occurrence of each caller
        if node_id not in seen:
            seen.add(node_id)
            kept.append(node_id)
    return tuple(reversed(kept))


def missing_keys(model: Model, b: BlockModel, keys: frozenset[str], succeeded: frozenset[str],
                 memory: dict[str, tuple[Any, str]]) -> list[tuple[str, str]]:
    """``(capability, key)`` for each required key that may resolve to nothing here.

    The block's own capability sees its params, the inherited memory, the context (which by
    then holds its prerequisites' outputs) and schema defaults; a prerequisite that may still
    have to run sees no params and the outputs of the prerequisites before it.
    """
    cap = b.cap
    out: list[tuple[str, str]] = []
    if cap is None:
        return out
    have = set(keys)
    for req in cap.closure:
        pre = model.caps.get(req)
        if pre is not None and req not in succeeded:
            out.extend((req, k) for k in pre.required if k not in have and k not in memory and k not in pre.defaults)
        if pre is not None:
            have |= pre.outputs
    out.extend((cap.id, k) for k in cap.required
               if k not in have and k not in b.params and k not in memory and k not in cap.defaults)
    return out


def _events(model: Model, b: BlockModel, ctrl: Ctrl, keys: frozenset[str], succeeded: frozenset[str]) -> list[str]:
    """Every event the block's step can end with in this state, in a stable order."""
    cap = b.cap
    events: list[str] = list(cap.events) if cap is not None else ["success"]
    events.extend(e for e in _ALWAYS if e not in events)
    if cap is not None and cap.closure and (PREREQUISITE_FAILED in b.routes or any(r not in succeeded for r in cap.closure)):
        events.append(PREREQUISITE_FAILED)
    if INVALID not in events and (INVALID in b.routes or missing_keys(model, b, keys, succeeded, inherited(model, ctrl[0], ctrl[2]))):
        events.append(INVALID)
    return events


def _plan(model: Model, b: BlockModel, event: str) -> tuple[Route | None, frozenset[str], frozenset[str], str]:
    """What an event of block ``b`` does, independent of the state: (route, adds, wins, end)."""
    key = ("plan", b.node, b.block, event)
    cached = model.memory.get(key)
    if cached is not None:
        return cached
    cap = b.cap
    adds, wins = _EMPTY, _EMPTY
    if cap is not None and event != PREREQUISITE_FAILED:
        adds, wins = cap.closure_outputs, frozenset(cap.closure)
        if is_success(event):
            adds, wins = adds | cap.outputs, wins | {cap.id}
    if not is_success(event):
        adds = adds | _FAILURE_KEYS  # the engine records every failed step there
    route = b.routes.get(event) or b.fail_default
    if route is None:
        end = "no-transition" if b.has_transitions else ("completed" if is_success(event) else "failed")
    else:
        end = "return" if not isinstance(route.action, Jump | Call) else ""
    model.memory[key] = plan = (route, adds, wins, end)
    return plan


def _edges(model: Model, ctrl: Ctrl, keys: frozenset[str], succeeded: frozenset[str]) -> list[Edge]:
    node, block, chain, root = ctrl
    b = model.blocks[(node, block)]
    out: list[Edge] = []
    for event in _events(model, b, ctrl, keys, succeeded):
        route, adds, wins, end = _plan(model, b, event)
        if route is None or end == "return":
            out.append(Edge(event, route, None, end, adds, wins))
            continue
        action = route.action
        if isinstance(action, Jump):
            out.append(Edge(event, route, (node, action.block, chain, root), "", adds, wins))
        else:
            callee = model.manifest.nodes.get(action.node)  # type: ignore[union-attr]
            if callee is None or callee.entry_block not in callee.blocks:
                continue  # reported by the loader
            target = (action.node, callee.entry_block, callee_chain(model, (node, chain, root), action.node), False)  # type: ignore[union-attr]
            out.append(Edge(event, route, target, "", adds, wins))
    return out


class _Solver:
    """The fixpoint: a worklist over states, contexts entered by call sites, exits returned."""

    def __init__(self, model: Model, start: Ctrl, initial: frozenset[str]) -> None:
        self.model = model
        self.ex = Exploration(model, start, initial, budget=state_budget(len(model.blocks)))
        self.entry: dict[Ctx, tuple[frozenset[str], frozenset[str]]] = {ctx_of(start): (initial, _EMPTY)}
        self.members: dict[Ctx, list[Ctrl]] = {}
        self.queue: deque[Ctrl] = deque()
        self.queued: set[Ctrl] = set()
        #: Per context, the meet of its exits' effects: what every return from it guarantees.
        #: A call site needs only this (union distributes over intersection), so a context's
        #: exits are not each given back to each of its call sites: that was quadratic (100
        #: RETURNs and 100 call sites a node, 50 nodes: 2 million returns, 9 s).
        self.summary: dict[Ctx, tuple[frozenset[str], frozenset[str]]] = {}
        #: Per context, its call sites in the root's last block (each exit completes the run).
        self.completing: dict[Ctx, list[tuple[Ctrl, Edge]]] = {}
        self._completed: set[tuple[Ctrl, Edge, Ctrl, Edge]] = set()
        self._reach(start, _EMPTY, _EMPTY)

    def _push(self, ctrl: Ctrl) -> None:
        if ctrl not in self.queued:
            self.queued.add(ctrl)
            self.queue.append(ctrl)

    def _reach(self, ctrl: Ctrl, gen: frozenset[str], wins: frozenset[str]) -> None:
        """Meet ``(gen, wins)`` (relative to the context's entry) into ``ctrl``'s value."""
        values = self.ex.values
        old = values.get(ctrl)
        if old is None:
            if len(values) >= self.ex.budget:
                self.ex.truncated = True
                return
            values[ctrl] = (gen, wins)
            self.members.setdefault(ctx_of(ctrl), []).append(ctrl)
        else:
            met = (old[0] & gen, old[1] & wins)
            if met == old:
                return
            values[ctrl] = met
        self._push(ctrl)

    def _enter(self, ctx: Ctx, keys: frozenset[str], wins: frozenset[str]) -> None:
        old = self.entry.get(ctx)
        new = (keys, wins) if old is None else (old[0] & keys, old[1] & wins)
        if new != old:
            self.entry[ctx] = new
            for member in self.members.get(ctx, ()):
                self._push(member)  # its events may change with what the context guarantees

    def _exit(self, ctx: Ctx, key: tuple[Ctrl, Edge], gen: frozenset[str], wins: frozenset[str]) -> None:
        exits = self.ex.exits.setdefault(ctx, {})
        old = exits.get(key)
        new = (gen, wins) if old is None else (old[0] & gen, old[1] & wins)
        if new == old:
            return
        exits[key] = new
        if old is None:
            for site, call in self.completing.get(ctx, ()):
                self._complete(site, call, key)
        known = self.summary.get(ctx)
        met = new if known is None else (known[0] & new[0], known[1] & new[1])
        if met == known:
            return  # every return from ``ctx`` guarantees what it did: nothing to give back
        self.summary[ctx] = met
        for site, call in list(self.ex.callers.get(ctx, ())):
            self._return(site, call, met)

    def _complete(self, site: Ctrl, call: Edge, exit_key: tuple[Ctrl, Edge]) -> None:
        """The callee's exit ``exit_key`` returns to ``site``, a CALL in the root's last block."""
        entry = (site, call, *exit_key)
        if entry not in self._completed:
            self._completed.add(entry)  # type: ignore[arg-type]
            self.ex.completing_calls.append(entry)  # type: ignore[arg-type]

    def _return(self, site: Ctrl, call: Edge, effect: tuple[frozenset[str], frozenset[str]]) -> None:
        """The callee returns to call site ``site``, guaranteeing ``effect`` (its summary)."""
        node, block, chain, root = site
        nxt = self.model.blocks[(node, block)].next_block
        if nxt is None and root:
            return  # the run completes there: see _complete
        gen, wins = self.ex.values[site]
        gen, wins = gen | call.adds | effect[0], wins | call.succeeds | effect[1]
        if nxt is not None:
            self._reach((node, nxt, chain, root), gen, wins)
        else:
            self._exit(ctx_of(site), (site, call), gen, wins)  # returning there returns again

    def run(self) -> Exploration:
        ex, values = self.ex, self.ex.values
        followed = 0
        while self.queue:
            ctrl = self.queue.popleft()
            self.queued.discard(ctrl)
            gen, wins = values[ctrl]
            ctx = ctx_of(ctrl)
            base_keys, base_wins = self.entry[ctx]
            out = ex.edges[ctrl] = _edges(self.model, ctrl, base_keys | gen, base_wins | wins)
            followed += len(out)
            if followed > MAX_EDGES:  # a state's edges are its capability's events: the states' bound is not theirs
                ex.truncated = True
                break
            for edge in out:
                after_gen, after_wins = gen | edge.adds, wins | edge.succeeds
                if edge.end == "return" and not ctrl[3]:
                    self._exit(ctx, (ctrl, edge), after_gen, after_wins)
                elif edge.target is None:
                    continue
                elif edge.target[3] is False and isinstance(edge.route.action, Call):  # type: ignore[union-attr]
                    callee = ctx_of(edge.target)
                    self._enter(callee, base_keys | after_gen, base_wins | after_wins)
                    self._reach(edge.target, _EMPTY, _EMPTY)
                    calls = ex.callers.setdefault(callee, {})
                    calls[(ctrl, edge)] = None
                    if ctrl[3] and self.model.blocks[(ctrl[0], ctrl[1])].next_block is None:
                        sites = self.completing.setdefault(callee, [])
                        if (ctrl, edge) not in sites:
                            sites.append((ctrl, edge))
                            for exit_key in list(ex.exits.get(callee, {})):
                                self._complete(ctrl, edge, exit_key)
                    summary = self.summary.get(callee)
                    if summary is not None:
                        self._return(ctrl, edge, summary)
                else:
                    self._reach(edge.target, after_gen, after_wins)
        # Report absolute values: what holds on every path, not what was added since entry.
        for ctrl, (gen, wins) in values.items():
            keys, won = self.entry[ctx_of(ctrl)]
            values[ctrl] = (keys | gen, won | wins)
        return ex


def explore(model: Model) -> Exploration:
    """Explore every state reachable from the manifest's start, to the fixpoint."""
    manifest = model.manifest
    # Only the keys some capability reads: every state carries the set of keys that hold
    # there, so 20,000 declared inputs no step reads made a check of 2,000 states 17 s and
    # gigabytes (each state a copy of them); what is not read can be neither missing nor wrong.
    initial = frozenset(k for k in manifest.inputs if k in model.watched)
    start_node = manifest.nodes.get(manifest.start)
    if start_node is None or (manifest.start, start_node.entry_block) not in model.blocks:
        return Exploration(model, None, initial)
    return _Solver(model, (manifest.start, start_node.entry_block, (), True), initial).run()
