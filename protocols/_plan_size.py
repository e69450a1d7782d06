"""How large a plan may be: its steps, its dependencies and its references, each bounded.

:func:`protocols.plan.check_plan` asks these first and checks nothing else of a plan past one
(the checks after them cost too much); the OML guard asks :func:`plan_size_problem` of a
pipeline's steps and needs. Plain data and counting only: no I/O.
"""

from __future__ import annotations

from typing import Any

from ontoflow.protocols.errors import Problem

__all__ = ["MAX_PLAN_DEPENDENCIES", "MAX_PLAN_REFERENCES", "MAX_PLAN_STEPS", "plan_size_problem", "references_problem"]

#: The most steps, and dependencies (``depends_on`` entries, summed), a plan may have. Its
#: checks and its compilation follow every step's ancestors (quadratic in a chain, worse in a
#: dense DAG): a submitted plan of 3,000 chained steps held a daemon's loop for about a minute,
#: long enough to lose its workers. Far above what a person or the planner writes.
MAX_PLAN_STEPS, MAX_PLAN_DEPENDENCIES = 500, 5_000

def plan_size_problem(steps: int, dependencies: int) -> Problem | None:
    """The problem of a plan of ``steps`` steps with ``dependencies`` dependencies in all, if
    it is over ``MAX_PLAN_STEPS`` or ``MAX_PLAN_DEPENDENCIES``; None when it is not."""
    if steps > MAX_PLAN_STEPS:
        return Problem(path="steps", message=f"{steps} steps; a plan has at most {MAX_PLAN_STEPS}")
    if dependencies > MAX_PLAN_DEPENDENCIES:
        return Problem(path="steps", message=f"{dependencies} depends_on entries in all; a plan has at most "
                                             f"{MAX_PLAN_DEPENDENCIES}")
    return None

#: The most ``${...}`` references a plan's params may hold, in all. Each is parsed when the plan
#: is checked and resolved in the daemon's loop when its step begins: a step of 100,000 of them
#: (1.4 MB) held the loop half a second, and a document of 64 MiB holds four million.
MAX_PLAN_REFERENCES = 10_000

def references_problem(plan: Any) -> Problem | None:
    """The problem of a plan whose params hold more than :data:`MAX_PLAN_REFERENCES`
    references in all, at the step whose params pass it; None when they do not. Counted by
    their ``${`` (an unclosed one too), without parsing them and without recursion."""
    total = 0
    for i, step in enumerate(plan.steps):
        stack: list[Any] = [step.params]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                if "${" in item:
                    total += item.count("${") - item.count("$${")
            elif isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
        if total > MAX_PLAN_REFERENCES:
            return Problem(path=f"steps[{i}].params", message=f"its references bring the plan's past "
                           f"{MAX_PLAN_REFERENCES:,}; a plan's params hold at most {MAX_PLAN_REFERENCES:,} references")
    return None
