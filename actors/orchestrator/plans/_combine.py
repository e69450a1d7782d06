"""Combining step results into the plan's output, in step order (never arrival order).

* ``last``: the outputs of the last plan step, in step order, that succeeded (follow-ups are
  not candidates);
* ``merge``: the outputs of every successful step (follow-ups right after their parent),
  later steps overriding earlier ones on a shared key;
* ``report``: ``ontoflow.plan.report``, one record per step keyed by ``output_key``.

Every mode also writes ``ontoflow.plan.steps``: step id -> status, in step order.
"""

from __future__ import annotations

from typing import Any

from ontoflow.actors.orchestrator.plans._compile import CompiledPlan
from ontoflow.actors.orchestrator.plans._state import SUCCEEDED, PlanState

__all__ = ["REPORT_KEY", "STEPS_KEY", "combine", "step_order"]

#: The context key of a ``report`` plan's records.
REPORT_KEY = "ontoflow.plan.report"
#: The context key of every step's status.
STEPS_KEY = "ontoflow.plan.steps"


def step_order(compiled: CompiledPlan, state: PlanState) -> list[tuple[str, str, bool]]:
    """``(result id, output name, is follow-up)`` of every ended step, in step order."""
    out: list[tuple[str, str, bool]] = []
    for step in compiled.steps:
        if step.id in state.results:
            out.append((step.id, step.output_key, False))
        for fu in step.follow_ups:
            fid = f"{step.id}+{fu.role}"
            if fid in state.results:
                out.append((fid, fid, True))
    return out


def combine(compiled: CompiledPlan, state: PlanState) -> dict[str, Any]:
    """The keys the plan's ``combine_mode`` adds to the run's context at its end."""
    order = step_order(compiled, state)
    results = state.results
    steps = {rid: results[rid].status for rid, _, _ in order}
    combined: dict[str, Any] = {STEPS_KEY: steps}
    mode = compiled.plan.combine_mode
    if mode == "last":
        for rid, _, follow_up in reversed(order):
            if not follow_up and results[rid].status == SUCCEEDED:
                combined.update(results[rid].outputs)
                break
    elif mode == "merge":
        for rid, _, _ in order:
            if results[rid].status == SUCCEEDED:
                combined.update(results[rid].outputs)
    else:
        report: dict[str, Any] = {}
        for rid, name, _ in order:
            r = results[rid]
            report[name] = {
                "step": rid,
                "capability": r.capability,
                "status": r.status,
                "event": r.event,
                "outputs": r.outputs,
                "error": r.error,
            }
        combined[REPORT_KEY] = report
    # The engine's own record wins over a step's output of that name, which replaced it.
    combined[STEPS_KEY] = steps
    return combined
