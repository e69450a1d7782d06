"""Scheduling a plan's steps: begin the ready ones, fill the free slots, end the run when done.

A step is *begun* as soon as the sorter says its dependencies ended: skipped if one of them
did not succeed, ended at once if a reference or a required input does not resolve, fanned out
if its capability declares a list parameter that is a list here, else queued as one unit.
Begun units wait in ``state.queue``, ordered by step order, for one of the plan's
``max_concurrency`` slots, and a fan-out's children also for one of its own
``max_concurrency``. :func:`pump` loops (never recursing) until nothing more can start, and
ends the run when nothing is left: completed when every required plan step succeeded. Pure
like the engine.
"""

from __future__ import annotations

from typing import Any

from ontoflow.protocols.context import BlockContract, StepContext, SystemMetadata
from ontoflow.protocols.events import INVALID

from ontoflow.actors.orchestrator.engine import Command, Dispatch, resolve_inputs
from ontoflow.actors.orchestrator.plans._asking import dispatch_resumed
from ontoflow.actors.orchestrator.plans._compile import MAX_FAN_OUT, CompiledPlan, StepPlan, not_a_list, two_lists
from ontoflow.actors.orchestrator.plans._ending import NO_MEMORY, end_at_once, end_run, enqueue, finish_group, run_layer
from ontoflow.actors.orchestrator.plans._refs import ParamsTooLarge, UnresolvedReference, substitute
from ontoflow.actors.orchestrator.plans._state import (
    FAILED,
    SKIPPED,
    SUCCEEDED,
    FanOut,
    PlanState,
    Running,
    StepResult,
    Unit,
)

__all__ = ["SKIPPED_EVENT", "pump"]

#: The event recorded for a step that did not run because a dependency did not succeed.
SKIPPED_EVENT = "skipped"

_MISSING: Any = object()


def pump(c: CompiledPlan, state: PlanState, now: int, cmds: list[Command]) -> None:
    """Begin every ready step, fill the free slots, and end the run when nothing is left."""
    sorter = state.sorter
    assert sorter is not None  # set by RunSubmitted, before any other fact is accepted
    while True:
        ready = sorter.get_ready()
        for step_id in sorted(ready, key=lambda s: c.by_id[s].index):
            _begin(c, state, c.by_id[step_id], now)
        if not _launch(c, state, now, cmds) and not ready:
            break
    if not sorter.is_active() and not state.queue and not state.running and not state.asking:
        failed = next((s for s in c.steps if s.required and state.results[s.id].status != SUCCEEDED), None)
        if failed is None:
            end_run(c, state, "completed", None, now, cmds)
        else:
            r = state.results[failed.id]
            detail = f": {r.error}" if r.error else ""
            end_run(c, state, "failed", f"required step {failed.id!r} ({r.capability}) ended with {r.event!r}{detail}", now, cmds)


def _end_now(c: CompiledPlan, state: PlanState, step: StepPlan, now: int, *, status: str, event: str, reason: str,
             error: str) -> None:
    """End a plan step that never got a worker (skipped, bad reference, missing input)."""
    unit = Unit((step.index, 0, 0), step.id, step.id, step.capability, {}, {})
    end_at_once(c, state, unit, StepResult(status, event, step.capability.id, {}, error, reason), started_ms=now, now=now)


def _begin(c: CompiledPlan, state: PlanState, step: StepPlan, now: int) -> None:
    """Turn a ready step into a queued unit or fan-out, or end it at once."""
    cap = step.capability
    for dep in step.needs:
        r = state.results[dep]
        if r.status != SUCCEEDED:
            why = "was skipped" if r.status == SKIPPED else f"ended with {r.event!r}"
            _end_now(c, state, step, now, status=SKIPPED, event=SKIPPED_EVENT, reason="dependency_failed",
                     error=f"skipped: dependency {dep!r} {why}")
            return
    # Every step it needs succeeded; an optional step before it in a sequential plan may not
    # have, and brings no outputs then.
    produced = {a: state.results[a].outputs for a in step.ancestors}
    try:
        params = substitute(step.params, step.id, produced, sites=step.sites)
    except UnresolvedReference as exc:
        reason = "params_too_large" if isinstance(exc, ParamsTooLarge) else "reference"
        _end_now(c, state, step, now, status=FAILED, event=INVALID, reason=reason, error=str(exc))
        return
    layer = run_layer(state)
    for a in step.ancestors:
        layer.update(produced[a])
    for rule in step.fan_out:
        items = params.get(rule.param_name, layer.get(rule.param_name, _MISSING))
        if not isinstance(items, list):
            if rule.param_name in params and rule.param_name not in cap.input_keys:  # a reference gave no list
                _end_now(c, state, step, now, status=FAILED, event=INVALID, reason="fan_out",
                         error=f"step {step.id!r}: " + not_a_list(cap.meta, rule.param_name, items))
                return
            continue
        also = next((r.param_name for r in step.fan_out if r.param_name != rule.param_name and r.param_name not in
                     cap.input_keys and isinstance(params.get(r.param_name, layer.get(r.param_name)), list)), None)
        if also is not None and not c.recorded:  # fanned over the first, the second dropped without a word
            _end_now(c, state, step, now, status=FAILED, event=INVALID, reason="fan_out",
                     error=f"step {step.id!r}: " + two_lists(cap.meta, rule.param_name, also))
            return
        if len(items) > MAX_FAN_OUT:  # one journaled child per item: a run's size is not the data's
            _end_now(c, state, step, now, status=FAILED, event=INVALID, reason="fan_out",
                     error=f"step {step.id!r}: {rule.param_name!r} fans out to {len(items):,} items; at most {MAX_FAN_OUT:,}")
            return
        base = {k: v for k, v in params.items() if k != rule.param_name}
        if items:  # only the element differs from child to child: a key one misses, every one does
            _, missing = resolve_inputs(cap, {**base, rule.single_param_name: items[0]}, NO_MEMORY, layer, c.defaults)
            if missing is not None:
                _end_now(c, state, step, now, status=FAILED, event=INVALID, reason="missing_input",
                         error=_missing(step, missing))
                return
        group = FanOut(step.id, (step.index, 0, 0), max(1, rule.max_concurrency), list(items), [None] * len(items), now,
                       params, base, rule.single_param_name, layer)
        state.groups[step.id] = group
        if items:
            enqueue(state, group)
        else:
            finish_group(c, state, group, now)
        return
    inputs, missing = resolve_inputs(cap, params, NO_MEMORY, layer, c.defaults)
    if missing is not None:
        _end_now(c, state, step, now, status=FAILED, event=INVALID, reason="missing_input", error=_missing(step, missing))
        return
    enqueue(state, Unit((step.index, 0, 0), step.id, step.id, cap, inputs, params))


def _missing(step: StepPlan, key: str) -> str:
    return f"step {step.id!r}: required input {key!r} resolved to nothing (step params, run context, defaults, schema default)"


def _launch(c: CompiledPlan, state: PlanState, now: int, cmds: list[Command]) -> bool:
    """Dispatch queued units in step order while slots are free; True if a unit ended at once."""
    ended_now = False
    queue, limit, i = state.queue, c.plan.max_concurrency, 0
    while i < len(queue) and len(state.running) < limit:
        item = queue[i]
        if isinstance(item, Unit):
            group = state.groups.get(item.group) if item.group is not None else None
            if group is not None:  # an answered fan-out child: it waits for a slot of its fan-out too
                if group.running >= group.limit:
                    i += 1
                    continue
                group.running += 1
            del queue[i]
            _dispatch(c, state, item, now, cmds)
            continue
        if item.next >= len(item.pending):
            del queue[i]
            continue
        if item.running >= item.limit:
            i += 1
            continue
        k = item.next
        item.next += 1
        step = c.by_id[item.step]
        unit = Unit((step.index, 0, k), f"{step.id}[{k}]", step.id, step.capability, {}, item.params, group=step.id, child=k)
        element = item.pending[k]
        item.pending[k] = None  # launched: drop the element, the group only counts from here
        item.running += 1
        inputs, missing = resolve_inputs(step.capability, {**item.base, item.single: element}, NO_MEMORY, item.layer,
                                         c.defaults)
        if missing is not None:  # not after the first element's check as the step began; kept total
            result = StepResult(FAILED, INVALID, step.capability.id, {}, f"step {unit.step_id!r}: required input "
                                f"{missing!r} resolved to nothing", "missing_input")
            end_at_once(c, state, unit, result, started_ms=now, now=now)
            ended_now = True
            continue
        unit.inputs = inputs
        _dispatch(c, state, unit, now, cmds)
    return ended_now


def _dispatch(c: CompiledPlan, state: PlanState, unit: Unit, now: int, cmds: list[Command]) -> None:
    if unit.resumed is not None:
        dispatch_resumed(state, unit, now, cmds)
    else:
        _dispatch_first(c, state, unit, now, cmds)
    if len(state.running) > state.max_in_flight:
        state.max_in_flight = len(state.running)


def _dispatch_first(c: CompiledPlan, state: PlanState, unit: Unit, now: int, cmds: list[Command]) -> None:
    cap = unit.capability
    block = unit.step_id if unit.follow_up else unit.plan_step
    context = StepContext(
        [],
        BlockContract(c.name, block, cap.id, "" if unit.follow_up else c.by_id[unit.plan_step].description),
        {},
        {},
        SystemMetadata(state.run_id, c.name, block, unit.step_id, c.plan_hash, c.worktree),
    )
    budget = cap.budget_ms
    command = Dispatch(
        state.run_id, unit.step_id, 1, cap.id, unit.inputs, context,
        None if budget is None else now + budget, cap.idempotent, [],
    )
    state.running[unit.step_id] = Running(unit, 1, now, command)
    cmds.append(command)
