"""Ending plan units, fan-outs and the run: the trace entry, the step's result, what it lets go on.

A unit (a step, a fan-out child or a follow-up) ends either through a fact about its attempt
(:func:`close`) or at once, decided by the engine without a worker (:func:`end_at_once`).
Either way its end is traced (``engine.trace_entry``, the same entry as a workflow step's) and
its :class:`StepResult` recorded; a plan step's success queues its enabled follow-ups, a
fan-out's last child gathers the fan-out, and the sorter is told the plan step is done so its
dependants can begin. :func:`end_run` ends the run with its combined output. Pure like the
engine.
"""

from __future__ import annotations

import bisect
from typing import Any

from ontoflow.protocols.events import INVALID
from ontoflow.protocols.types import RunStatusName

from ontoflow.actors.orchestrator.engine import (
    ANSWER_KEY,
    Command,
    RunEnded,
    StepEnd,
    at_once_end,
    resolve_inputs,
    trace_entry,
)
from ontoflow.actors.orchestrator.plans._combine import combine
from ontoflow.actors.orchestrator.plans._compile import CompiledPlan, StepPlan
from ontoflow.actors.orchestrator.plans._compose import condition_holds, map_params
from ontoflow.actors.orchestrator.plans._state import FAILED, SUCCEEDED, FanOut, PlanState, StepResult, Unit

__all__ = ["NO_MEMORY", "close", "end_at_once", "end_run", "enqueue", "finish_group", "run_layer", "trace"]

#: Plan steps have no static memory: the empty layer ``resolve_inputs`` is given.
NO_MEMORY: dict[str, Any] = {}


def run_layer(state: PlanState) -> dict[str, Any]:
    """The run's context as a step's input layer: without a person's answer to a question
    (``ANSWER_KEY``, which an answer writes there): that answer reaches the step that asked,
    in its own dispatch. Layered, it reached every step after as the answer to a question
    it never asked (a second "which Springfield?" step took the first one's answer)."""
    if ANSWER_KEY not in state.context:
        return dict(state.context)
    return {k: v for k, v in state.context.items() if k != ANSWER_KEY}


def _key(item: Unit | FanOut) -> tuple[int, int, int]:
    return item.key


def enqueue(state: PlanState, item: Unit | FanOut) -> None:
    """Queue a unit or a fan-out for a slot, in step order (``Unit.key``)."""
    bisect.insort(state.queue, item, key=_key)


def trace(c: CompiledPlan, state: PlanState, unit: Unit, end: StepEnd, action: str | None = None) -> None:
    """Append the unit's trace entry (``block`` is its plan step, or its own id for a follow-up)."""
    block = unit.step_id if unit.follow_up else unit.plan_step
    state.trace.append(trace_entry(end, node=c.name, block=block, action=action))


def close(c: CompiledPlan, state: PlanState, unit: Unit, end: StepEnd, status: str, outputs: dict[str, Any]) -> None:
    """Record a dispatched unit's end in the trace and its result, then let the plan go on."""
    trace(c, state, unit, end)
    _end_unit(c, state, unit, StepResult(status, end.event, end.capability, outputs, end.error, end.reason), end.ended_ms)


def end_at_once(c: CompiledPlan, state: PlanState, unit: Unit, result: StepResult, *, started_ms: int, now: int) -> None:
    """End a unit the engine decided without a worker (or a fan-out's gathering) as ``result``."""
    end = at_once_end(step_id=unit.step_id, capability=result.capability, event=result.event, reason=result.reason,
                      error=result.error, started_ms=started_ms, ended_ms=now)
    trace(c, state, unit, end)
    _end_unit(c, state, unit, result, now)


def _end_unit(c: CompiledPlan, state: PlanState, unit: Unit, result: StepResult, now: int) -> None:
    if unit.group is not None:
        group = state.groups[unit.group]
        group.results[unit.child] = result
        group.running -= 1
        group.ended += 1
        if group.ended == len(group.results):
            finish_group(c, state, group, now)
        return
    state.results[unit.step_id] = result
    if unit.follow_up:
        return
    step = c.by_id[unit.plan_step]
    if result.status == SUCCEEDED:
        _compose(c, state, step, unit.params, result.outputs, now)
    assert state.sorter is not None
    state.sorter.done(step.id)


def finish_group(c: CompiledPlan, state: PlanState, group: FanOut, now: int) -> None:
    """Gather a fan-out in element order: each output key maps to the children's values."""
    step = c.by_id[group.step]
    cap = step.capability
    children = [r for r in group.results if r is not None]
    failed = next(((i, r) for i, r in enumerate(children) if r.status != SUCCEEDED), None)
    if failed is None:
        keys = list(cap.meta.outputs)  # the outputs rule: only declared keys travel on (engine._step_end)
        gathered = {k: [r.outputs.get(k) for r in children] for k in keys}
        result = StepResult(SUCCEEDED, "success", cap.id, gathered)
    else:
        i, r = failed
        result = StepResult(FAILED, r.event, cap.id, {}, f"fan-out element {group.step}[{i}] ended with {r.event!r}", r.reason)
    del state.groups[group.step]
    unit = Unit(group.key, step.id, step.id, cap, {}, group.params)
    end_at_once(c, state, unit, result, started_ms=group.started_ms, now=now)


def _compose(c: CompiledPlan, state: PlanState, step: StepPlan, params: dict[str, Any], outputs: dict[str, Any], now: int) -> None:
    """Queue the step's follow-ups whose ``enabled_if`` holds (seed 004 composition)."""
    if not step.follow_ups:
        return
    visible = {**c.plan.parameters, **params}
    for n, fu in enumerate(step.follow_ups):
        if not condition_holds(fu.enabled_if, visible, outputs, state.context):
            state.notes.append(f"follow-up {fu.role!r} of step {step.id!r} not enabled")
            continue
        fid = f"{step.id}+{fu.role}"
        mapped = map_params(fu.param_map, visible, outputs)
        inputs, missing = resolve_inputs(fu.capability, mapped, NO_MEMORY, {**run_layer(state), **outputs}, c.defaults)
        unit = Unit((step.index, 1, n), fid, step.id, fu.capability, inputs or {}, mapped, follow_up=True)
        if missing is not None:
            result = StepResult(FAILED, INVALID, fu.capability.id, {}, f"step {fid!r}: required input {missing!r} resolved to nothing", "missing_input")
            end_at_once(c, state, unit, result, started_ms=now, now=now)
            continue
        enqueue(state, unit)


def end_run(c: CompiledPlan, state: PlanState, status: RunStatusName, error: str | None, now: int,
            cmds: list[Command]) -> None:
    """End the run with ``status``: its context gets the combined output; emits its one RunEnded."""
    state.context.update(combine(c, state))
    state.status = status
    state.error = error
    state.ended_ms = now
    cmds.append(RunEnded(state.run_id, status, error))
