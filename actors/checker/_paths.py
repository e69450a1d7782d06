"""Paths through an :class:`~._explore.Exploration`: counterexamples, ends, returns, recursion.

A counterexample is found by a reachability pass over the explored states that follows calls
into their callees and returns out of them only to the call site that entered (the same
summaries as the analysis), optionally refusing every edge that puts a given key into the
context: the first path it finds to a state is a run that gets there without that key.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from ontoflow.protocols.manifest import Call

from ontoflow.actors.checker._explore import Ctrl, Ctx, Edge, Exploration, ctx_of

__all__ = ["PathFinder", "format_step", "reaches_end", "recursive_calls", "return_targets"]

# parent kinds: ("jump", prev, edge) | ("call", site, edge) | ("return", site, call, exit_state, exit_edge)
_Parent = tuple[Any, ...]


def format_step(ctrl: Ctrl, edge: Edge, model: Any = None) -> str:
    """One step of a counterexample: ``main.a --success--> CALL:sub (push main.b)``."""
    node, block = ctrl[0], ctrl[1]
    head = f"{node}.{block} --{edge.event}-->"
    if edge.route is None:
        return f"{head} run ends ({edge.end})"
    if isinstance(edge.route.action, Call) and model is not None:
        nxt = model.blocks[(node, block)].next_block
        return f"{head} {edge.route.text} (push {node}.{nxt})" if nxt else f"{head} {edge.route.text} (push {node}.(last block: returns again))"
    if edge.end == "return":
        return f"{head} RETURN (stack empty: run completes)" if ctrl[3] else f"{head} RETURN"
    return f"{head} {edge.route.text}"


class PathFinder:
    """Shortest-first runs to states, optionally avoiding every edge that provides ``key``."""

    def __init__(self, ex: Exploration, key: str | None = None) -> None:
        self.ex = ex
        self.parent: dict[Ctrl, _Parent | None] = {}
        if ex.start is None or (key is not None and key in ex.initial_keys):
            return
        self._search(key)

    def _search(self, key: str | None) -> None:
        ex, parent = self.ex, self.parent
        blocked = (lambda e: False) if key is None else (lambda e: key in e.adds)
        callers: dict[Ctx, list[tuple[Ctrl, Edge]]] = {}
        exits: dict[Ctx, list[tuple[Ctrl, Edge]]] = {}
        queue: deque[Ctrl] = deque()

        def reach(ctrl: Ctrl, how: _Parent | None) -> None:
            if ctrl not in parent:
                parent[ctrl] = how
                queue.append(ctrl)

        def give_back(site: Ctrl, call: Edge, exit_state: Ctrl, exit_edge: Edge) -> None:
            node, block, chain, root = site
            nxt = ex.model.blocks[(node, block)].next_block
            if nxt is not None:
                reach((node, nxt, chain, root), ("return", site, call, exit_state, exit_edge))
            elif not root:  # the caller returns again: an exit of its own context
                found_exit(ctx_of(site), site, call)

        def found_exit(ctx: Ctx, state: Ctrl, edge: Edge) -> None:
            # Reaching is all a search needs: the first exit of a context found gives every call
            # site its way back; later ones reach nothing more (giving each back to each site
            # was quadratic in call sites and RETURNs).
            if ctx in exits:
                return
            exits[ctx] = [(state, edge)]
            for site, call in list(callers.get(ctx, ())):
                give_back(site, call, state, edge)

        reach(ex.start, None)  # type: ignore[arg-type]
        while queue:
            ctrl = queue.popleft()
            for edge in ex.edges.get(ctrl, ()):
                if blocked(edge):
                    continue
                if edge.end == "return" and not ctrl[3]:
                    found_exit(ctx_of(ctrl), ctrl, edge)
                elif edge.target is None:
                    continue
                elif edge.route is not None and isinstance(edge.route.action, Call):
                    callee = ctx_of(edge.target)
                    sites = callers.setdefault(callee, [])
                    if (ctrl, edge) in sites:
                        continue
                    sites.append((ctrl, edge))
                    reach(edge.target, ("call", ctrl, edge))
                    for exit_state, exit_edge in list(exits.get(callee, ())):
                        give_back(ctrl, edge, exit_state, exit_edge)
                else:
                    reach(edge.target, ("jump", ctrl, edge))

    def reached(self, ctrl: Ctrl) -> bool:
        """Whether the search reached ``ctrl``."""
        return ctrl in self.parent

    def path(self, ctrl: Ctrl) -> list[str]:
        """The steps of the run found to ``ctrl`` (``[]`` for the start or an unreached state);
        the last :data:`MAX_STEPS` of them, after a line saying how it starts, when longer."""
        steps = self._walk(ctrl, inner=False, limit=MAX_STEPS)
        steps.reverse()
        return steps

    def _walk(self, ctrl: Ctrl, inner: bool, limit: int) -> list[str]:
        """The steps back from ``ctrl`` (reversed); ``inner`` stops at its context's entry.
        Past ``limit`` steps the walk stops with :data:`_EARLIER` (each walk is bounded, so a
        long chain of blocks is not a counterexample per block as long as the chain)."""
        model = self.ex.model
        out: list[str] = []
        while True:
            if len(out) >= limit:
                out.append(_EARLIER)
                return out
            how = self.parent.get(ctrl)
            if how is None:
                return out
            kind = how[0]
            if kind == "jump":
                out.append(format_step(how[1], how[2], model))
                ctrl = how[1]
            elif kind == "call":
                if inner:
                    return out
                out.append(format_step(how[1], how[2], model))
                ctrl = how[1]
            else:
                _, site, call, exit_state, exit_edge = how
                out.append(f"{format_step(exit_state, exit_edge, model)} (pop -> {ctrl[0]}.{ctrl[1]})")
                out.extend(self._walk(exit_state, inner=True, limit=max(limit - len(out), 0)))
                if out[-1] is _EARLIER:
                    return out
                out.append(format_step(site, call, model))
                ctrl = site


#: The most steps a counterexample shows (the ones nearest the state it leads to).
MAX_STEPS = 50

#: The first line of a counterexample cut to its last :data:`MAX_STEPS` steps.
_EARLIER = f"... (earlier steps not shown: the run is longer than {MAX_STEPS} steps)"


def return_targets(ex: Exploration) -> dict[Ctx, set[Ctrl | None]]:
    """Where each context's RETURN lands: call sites' next blocks, ``None`` for the run's end.

    A call from a last block returns again: its callee's RETURN lands wherever the caller's
    context returns, so the sets are a fixpoint, found with a worklist: no recursion (thousands
    of nested last-block CALLs exhausted the stack) and no set cached while a cycle among the
    contexts was cut short (the recursive descent did both).
    """
    out: dict[Ctx, set[Ctrl | None]] = {}
    inherits: dict[Ctx, list[Ctx]] = {}  # caller context -> contexts that return where it does
    for ctx in {ctx_of(c) for c in ex.values}:
        found = out.setdefault(ctx, set())
        if ctx[2]:
            found.add(None)
        for site, _ in ex.callers.get(ctx, {}):
            node, block, chain, root = site
            nxt = ex.model.blocks[(node, block)].next_block
            if nxt is not None:
                found.add((node, nxt, chain, root))
            elif root:
                found.add(None)
            else:
                inherits.setdefault(ctx_of(site), []).append(ctx)
    todo = list(out)
    while todo:
        parent = todo.pop()
        for child in inherits.get(parent, ()):
            known = out.setdefault(child, set())
            if not out.get(parent, set()) <= known:
                known |= out[parent]
                todo.append(child)
    return out


def reaches_end(ex: Exploration) -> set[Ctrl]:
    """The states from which some path ends the run (over all return targets)."""
    targets = return_targets(ex)
    back: dict[Ctrl, list[Ctrl]] = {}
    good: set[Ctrl] = set()
    todo: list[Ctrl] = []

    def mark(ctrl: Ctrl) -> None:
        if ctrl not in good:
            good.add(ctrl)
            todo.append(ctrl)

    # Every RETURN of a context goes to every return target of it: one node stands for "the
    # context returns" between them (an edge from each RETURN to each target was quadratic:
    # 100 call sites and 100 RETURNs a node, 30 nodes, took 18 s).
    returning: dict[Ctx, Any] = {}
    for ctrl, out in ex.edges.items():
        for edge in out:
            if edge.end == "return":
                ctx = ctx_of(ctrl)
                if ctx not in returning:
                    returning[ctx] = hub = ("return", ctx)
                    for dst in targets.get(ctx, ()):
                        if dst is None:
                            mark(hub)  # type: ignore[arg-type]
                        else:
                            back.setdefault(dst, []).append(hub)  # type: ignore[arg-type]
                back.setdefault(returning[ctx], []).append(ctrl)
            elif edge.target is None:
                mark(ctrl)
            else:
                back.setdefault(edge.target, []).append(ctrl)
    while todo:
        for prev in back.get(todo.pop(), ()):
            mark(prev)
    return {ctrl for ctrl in good if len(ctrl) == 4}  # the states, without the return hubs


def recursive_calls(ex: Exploration) -> list[tuple[Ctrl, Edge]]:
    """The CALLs that can re-enter a context still on the stack: cycles among contexts.

    A call is recursive when its callee can reach its caller's context again, i.e. both are in
    one strongly connected component of the context call graph. One pass of Tarjan's algorithm
    (iterative: a chain of 10,000 CALLs must not exhaust the stack) finds the components in
    linear time; a search from every call site was quadratic, and a 2,000-node CALL chain kept
    ``ontoflow check`` busy for most of a minute.
    """
    calls: dict[Ctx, list[tuple[Ctx, Ctrl, Edge]]] = {}
    for callee, sites in ex.callers.items():
        for site, edge in sites:
            calls.setdefault(ctx_of(site), []).append((callee, site, edge))
    component = _components(calls)
    return [(site, edge) for caller, items in calls.items() for callee, site, edge in items
            if component.get(callee) == component[caller]]


def _components(calls: dict[Ctx, list[tuple[Ctx, Ctrl, Edge]]]) -> dict[Ctx, int]:
    """Context -> the number of its strongly connected component (Tarjan, without recursion)."""
    index: dict[Ctx, int] = {}
    low: dict[Ctx, int] = {}
    component: dict[Ctx, int] = {}
    stack: list[Ctx] = []
    on_stack: set[Ctx] = set()
    for root in calls:
        if root in index:
            continue
        work: list[tuple[Ctx, int]] = [(root, 0)]
        while work:
            ctx, i = work.pop()
            if i == 0:
                index[ctx] = low[ctx] = len(index)
                stack.append(ctx)
                on_stack.add(ctx)
            out = calls.get(ctx, ())
            while i < len(out):
                nxt = out[i][0]
                i += 1
                if nxt not in index:
                    work.append((ctx, i))
                    work.append((nxt, 0))
                    break
                if nxt in on_stack:
                    low[ctx] = min(low[ctx], index[nxt])
            else:
                if low[ctx] == index[ctx]:  # ctx roots a component: pop it
                    number = len(component)
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component[member] = number
                        if member == ctx:
                            break
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[ctx])
    return component
