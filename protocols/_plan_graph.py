"""A plan's dependency graph as far as it is sound, and every cycle in it.

:func:`protocols.plan.check_plan` reports every problem of a plan at once: a dangling
``depends_on`` or a duplicate id does not hide a cycle or a bad reference elsewhere (each was
reported only once the problems before it were fixed, one round per kind), and every cycle is
named, not the first one ``graphlib`` meets.
"""

from __future__ import annotations

import graphlib
from typing import Any

__all__ = ["MAX_CYCLES", "beside", "break_cycles", "sound_dependencies", "stand_in"]

#: The most cycles named (each found costs a pass over the graph).
MAX_CYCLES = 50


def sound_dependencies(plan: Any, first: dict[str, int]) -> dict[str, list[str]]:
    """Each step's effective dependencies (as ``plan_dependencies``) that name another existing
    step; a duplicate id's step counts by its first occurrence (``first``: id -> index), a
    parallel plan's ``depends_on`` not at all (each is a problem of its own)."""
    deps: dict[str, list[str]] = {}
    previous: str | None = None
    for i, step in enumerate(plan.steps):
        if first.get(step.id) != i:
            continue
        own = [] if plan.execution_mode == "parallel" else \
            [d for d in dict.fromkeys(step.depends_on) if d in first and d != step.id]
        if plan.execution_mode == "sequential" and previous is not None and previous not in own:
            own.insert(0, previous)
        deps[step.id] = own
        previous = step.id
    return deps


def break_cycles(deps: dict[str, list[str]]) -> list[list[str]]:
    """Every cycle of ``deps`` (at most :data:`MAX_CYCLES`), as ``graphlib`` names one; an edge
    of each is removed from ``deps`` in place, so that it is acyclic afterwards (past
    :data:`MAX_CYCLES` every dependency is removed: then no step's ancestry is known)."""
    cycles: list[list[str]] = []
    while True:
        try:
            graphlib.TopologicalSorter(deps).prepare()
            return cycles
        except graphlib.CycleError as exc:
            cycle = list(exc.args[1])
        cycles.append(cycle)
        if len(cycles) >= MAX_CYCLES:
            for node in deps:
                deps[node] = []
            return cycles
        # graphlib lists a cycle as [a, b, ..., a], each node a dependency of the one before it
        # (or after it): remove whichever of the two edges between its first two nodes exists.
        a, b = cycle[0], cycle[1]
        if b in deps.get(a, ()):
            deps[a] = [d for d in deps[a] if d != b]
        else:
            deps[b] = [d for d in deps[b] if d != a]


def stand_in(raw: Any, index: int) -> dict[str, Any]:
    """What a step that does not type (``params: 5``) still says, as a step: its id, capability
    and ``depends_on`` where they are of their types (an id that is not stands in as one no
    other step can name). The plan is checked with it in its place, so that the steps around it
    are checked too; the problems found on the stand-in itself are its typing problem's."""
    step = raw if isinstance(raw, dict) else {}
    sid, cap, deps = step.get("id"), step.get("capability"), step.get("depends_on")
    return {
        "id": sid if isinstance(sid, str) else f"\x00{index}",
        "capability": cap if isinstance(cap, str) else "",
        "depends_on": [d for d in deps if isinstance(d, str)] if isinstance(deps, list) else [],
    }


def beside(found: list[Any], typing: list[Any]) -> list[Any]:
    """``found`` (problems of a plan with stand-ins) less those at or under a typing problem's path."""
    paths = [p.path for p in typing]
    return [p for p in found if not any(p.path == q or p.path.startswith(q + ".") or p.path.startswith(q + "[")
                                        for q in paths)]
