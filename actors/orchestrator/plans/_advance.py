"""The plan's decision function: a run's state and a fact in, commands out.

sans-IO like the workflow engine: no clock (time comes in on each fact), no I/O, no logging
(notes go to ``state.notes``). Scheduling: a step is *begun* as soon as the sorter says its
dependencies ended (skipped if one of them did not succeed, ended at once if a reference or a
required input does not resolve, fanned out if its capability declares a list parameter that
is a list here); begun steps wait in ``state.queue``, ordered by step order, for one of the
plan's ``max_concurrency`` slots, and a fan-out's children also for one of its own
``max_concurrency``. The plan completes when every required plan step succeeded.
"""

from __future__ import annotations

import bisect
import graphlib
from typing import Any

import msgspec

from ontoflow.protocols.context import BlockContract, StepContext, SystemMetadata
from ontoflow.protocols.events import CANCELLED as CANCELLED_EVENT
from ontoflow.protocols.events import FAILURE, INVALID, TIMEOUT, UNAVAILABLE, is_success

from ontoflow.actors.orchestrator.engine import (
    CancelStep,
    Command,
    Dispatch,
    Fact,
    RunCancelled,
    RunEnded,
    RunSubmitted,
    StepDeadlineExpired,
    StepFinished,
    StepLost,
    StepUnavailable,
    TraceEntry,
)
from ontoflow.actors.orchestrator.engine import resolve_inputs  # the workflow engine's resolution order
from ontoflow.actors.orchestrator.plans._combine import combine
from ontoflow.actors.orchestrator.plans._compile import CompiledPlan, StepPlan
from ontoflow.actors.orchestrator.plans._compose import condition_holds, map_params
from ontoflow.actors.orchestrator.plans._refs import UnresolvedReference, substitute
from ontoflow.actors.orchestrator.plans._state import (
    CANCELLED,
    FAILED,
    SKIPPED,
    SUCCEEDED,
    FanOut,
    PlanState,
    Running,
    StepResult,
    Unit,
)

__all__ = ["SKIPPED_EVENT", "advance"]

#: The event recorded for a step that did not run because a dependency did not succeed.
SKIPPED_EVENT = "skipped"

_MISSING: Any = object()
_NO_MEMORY: dict[str, Any] = {}
_replace = msgspec.structs.replace


def _key(item: Unit | FanOut) -> tuple[int, int, int]:
    return item.key


def advance(compiled: CompiledPlan, state: PlanState, fact: Fact) -> list[Command]:
    """Apply ``fact`` to ``state`` (in place) and return the commands to carry out.

    A fact about a step or attempt not in flight, or arriving after the run ended, only adds
    a note. A run that ends emits exactly one :class:`RunEnded`.

    Raises:
        TypeError: when ``fact`` is not one of the engine's facts.
    """
    cmds: list[Command] = []
    kind = type(fact)
    if state.status != "running":
        state.notes.append(f"{kind.__name__} ignored: run already {state.status}")
    elif kind is StepFinished:
        _on_finished(compiled, state, fact, cmds)  # type: ignore[arg-type]
    elif kind is RunSubmitted:
        _on_submitted(compiled, state, fact, cmds)  # type: ignore[arg-type]
    elif kind is StepDeadlineExpired:
        _on_engine_end(compiled, state, fact, cmds, TIMEOUT, "deadline")  # type: ignore[arg-type]
    elif kind is StepUnavailable:
        _on_engine_end(compiled, state, fact, cmds, UNAVAILABLE, "no_worker")  # type: ignore[arg-type]
    elif kind is StepLost:
        _on_lost(compiled, state, fact, cmds)  # type: ignore[arg-type]
    elif kind is RunCancelled:
        _on_cancelled(compiled, state, fact, cmds)  # type: ignore[arg-type]
    else:
        raise TypeError(f"advance() takes a Fact, got {kind.__name__}")
    return cmds


# -- facts -------------------------------------------------------------------------------------


def _on_submitted(c: CompiledPlan, state: PlanState, fact: RunSubmitted, cmds: list[Command]) -> None:
    if state.started_ms is not None or fact.run_id != state.run_id:
        state.notes.append("RunSubmitted ignored: already submitted or for another run")
        return
    state.started_ms = fact.now_ms
    state.context = dict(fact.inputs)
    sorter: graphlib.TopologicalSorter[str] = graphlib.TopologicalSorter({s.id: s.deps for s in c.steps})
    sorter.prepare()
    state.sorter = sorter
    _pump(c, state, fact.now_ms, cmds)


def _in_flight(state: PlanState, step_id: str, attempt: int, what: str) -> Running | None:
    running = state.running.get(step_id)
    if running is None or running.attempt != attempt:
        state.notes.append(f"stale {what} {step_id}/{attempt} ignored")
        return None
    return running


def _on_finished(c: CompiledPlan, state: PlanState, fact: StepFinished, cmds: list[Command]) -> None:
    outcome = fact.outcome
    if outcome.run_id != state.run_id:
        state.notes.append(f"outcome for run {outcome.run_id} ignored")
        return
    running = _in_flight(state, outcome.step_id, outcome.attempt, "outcome")
    if running is None:
        return
    del state.running[outcome.step_id]
    cap = running.unit.capability
    event = outcome.event
    if event.startswith(cap.prefix):
        event = event[len(cap.prefix) :]
    outputs, dropped = outcome.outputs, []
    if cap.outputs and outputs:
        # Same rule as the capability base: only declared keys travel on.
        dropped = [k for k in outputs if k not in cap.outputs]
        outputs = {k: v for k, v in outputs.items() if k in cap.outputs}
    ok = is_success(event)
    result = StepResult(SUCCEEDED if ok else FAILED, event, cap.id, dict(outputs) if ok else {}, outcome.error, outcome.reason)
    _trace(c, state, running.unit, result, running.attempt, outcome.duration_ms, outcome.retries, running.started_ms, fact.now_ms, dropped)
    _end_unit(c, state, running.unit, result, fact.now_ms)
    _pump(c, state, fact.now_ms, cmds)


def _on_engine_end(c: CompiledPlan, state: PlanState, fact: Any, cmds: list[Command], event: str, reason: str) -> None:
    running = _in_flight(state, fact.step_id, fact.attempt, type(fact).__name__)
    if running is None:
        return
    del state.running[fact.step_id]
    cap = running.unit.capability.id
    if event == TIMEOUT:
        cmds.append(CancelStep(state.run_id, fact.step_id, fact.attempt))
        error = f"step {fact.step_id} of '{cap}' passed its deadline without an outcome"
    else:
        error = f"no live worker offered '{cap}' in time"
    result = StepResult(FAILED, event, cap, {}, error, reason)
    _trace(c, state, running.unit, result, running.attempt, float(fact.now_ms - running.started_ms), 0, running.started_ms, fact.now_ms, [])
    _end_unit(c, state, running.unit, result, fact.now_ms)
    _pump(c, state, fact.now_ms, cmds)


def _on_lost(c: CompiledPlan, state: PlanState, fact: StepLost, cmds: list[Command]) -> None:
    running = _in_flight(state, fact.step_id, fact.attempt, "StepLost")
    if running is None:
        return
    cap = running.unit.capability
    if not cap.idempotent:
        del state.running[fact.step_id]
        error = f"step {fact.step_id} of '{cap.id}' was lost ({fact.reason}) and the capability is not idempotent"
        result = StepResult(FAILED, FAILURE, cap.id, {}, error, fact.reason)
        _trace(c, state, running.unit, result, running.attempt, float(fact.now_ms - running.started_ms), 0, running.started_ms, fact.now_ms, [])
        _end_unit(c, state, running.unit, result, fact.now_ms)
        _pump(c, state, fact.now_ms, cmds)
        return
    running.attempt += 1
    budget = cap.budget_ms
    running.dispatch = _replace(
        running.dispatch, attempt=running.attempt, deadline_at_ms=None if budget is None else fact.now_ms + budget
    )
    state.notes.append(
        f"step {fact.step_id} of '{cap.id}' lost ({fact.reason}) on attempt {fact.attempt}; dispatched again as attempt {running.attempt}"
    )
    cmds.append(running.dispatch)


def _on_cancelled(c: CompiledPlan, state: PlanState, fact: RunCancelled, cmds: list[Command]) -> None:
    for step_id, running in sorted(state.running.items(), key=lambda kv: kv[1].unit.key):
        cmds.append(CancelStep(state.run_id, step_id, running.attempt))
        result = StepResult(CANCELLED, CANCELLED_EVENT, running.unit.capability.id, {}, fact.reason, "run_cancelled")
        _trace(c, state, running.unit, result, running.attempt, float(fact.now_ms - running.started_ms), 0, running.started_ms, fact.now_ms, [])
        if running.unit.group is None:
            state.results[running.unit.step_id] = result
    state.running.clear()
    state.queue.clear()
    _end(c, state, CANCELLED, f"run cancelled: {fact.reason}", fact.now_ms, cmds)


# -- scheduling --------------------------------------------------------------------------------


def _pump(c: CompiledPlan, state: PlanState, now: int, cmds: list[Command]) -> None:
    """Begin every ready step, fill the free slots, and end the run when nothing is left."""
    sorter = state.sorter
    assert sorter is not None  # set by RunSubmitted, before any other fact is accepted
    while True:
        ready = sorter.get_ready()
        for step_id in sorted(ready, key=lambda s: c.by_id[s].index):
            _begin(c, state, c.by_id[step_id], now)
        if not _launch(c, state, now, cmds) and not ready:
            break
    if not sorter.is_active() and not state.queue and not state.running:
        failed = next((s for s in c.steps if s.required and state.results[s.id].status != SUCCEEDED), None)
        if failed is None:
            _end(c, state, "completed", None, now, cmds)
        else:
            r = state.results[failed.id]
            detail = f": {r.error}" if r.error else ""
            _end(c, state, "failed", f"required step {failed.id!r} ({r.capability}) ended with {r.event!r}{detail}", now, cmds)


def _begin(c: CompiledPlan, state: PlanState, step: StepPlan, now: int) -> None:
    """Turn a ready step into a queued unit or fan-out, or end it at once."""
    cap = step.capability
    for dep in step.deps:
        r = state.results[dep]
        if r.status != SUCCEEDED:
            why = "was skipped" if r.status == SKIPPED else f"ended with {r.event!r}"
            _end_now(c, state, step, SKIPPED, SKIPPED_EVENT, "dependency_failed", f"skipped: dependency {dep!r} {why}", now)
            return
    # Every ancestor succeeded (a step whose dependency did not is skipped, transitively).
    produced = {a: state.results[a].outputs for a in step.ancestors}
    try:
        params = substitute(step.params, step.id, produced)
    except UnresolvedReference as exc:
        _end_now(c, state, step, FAILED, INVALID, "reference", str(exc), now)
        return
    layer = dict(state.context)
    for a in step.ancestors:
        layer.update(produced[a])
    for rule in step.fan_out:
        items = params.get(rule.param_name, layer.get(rule.param_name, _MISSING))
        if not isinstance(items, list):
            continue
        base = {k: v for k, v in params.items() if k != rule.param_name}
        pending: list[dict[str, Any] | str] = []
        for item in items:
            inputs, missing = resolve_inputs(cap, {**base, rule.single_param_name: item}, _NO_MEMORY, layer, c.defaults)
            pending.append(inputs if missing is None else f"required input {missing!r} resolved to nothing")
        group = FanOut(step.id, (step.index, 0, 0), max(1, rule.max_concurrency), pending, [None] * len(items), now, params)
        state.groups[step.id] = group
        if items:
            bisect.insort(state.queue, group, key=_key)
        else:
            _finish_group(c, state, group, now)
        return
    inputs, missing = resolve_inputs(cap, params, _NO_MEMORY, layer, c.defaults)
    if missing is not None:
        error = f"step {step.id!r}: required input {missing!r} resolved to nothing (step params, run context, defaults, schema default)"
        _end_now(c, state, step, FAILED, INVALID, "missing_input", error, now)
        return
    bisect.insort(state.queue, Unit((step.index, 0, 0), step.id, step.id, cap, inputs, params), key=_key)


def _launch(c: CompiledPlan, state: PlanState, now: int, cmds: list[Command]) -> bool:
    """Dispatch queued units in step order while slots are free; True if a unit ended at once."""
    ended_now = False
    queue, limit, i = state.queue, c.plan.max_concurrency, 0
    while i < len(queue) and len(state.running) < limit:
        item = queue[i]
        if isinstance(item, Unit):
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
        inputs = item.pending[k]
        item.pending[k] = ""  # launched: drop the inputs, the group only counts from here
        if isinstance(inputs, str):
            result = StepResult(FAILED, INVALID, step.capability.id, {}, f"step {unit.step_id!r}: {inputs}", "missing_input")
            _trace(c, state, unit, result, 0, 0.0, 0, now, now, [])
            item.running += 1
            _end_unit(c, state, unit, result, now)
            ended_now = True
            continue
        unit.inputs = inputs
        item.running += 1
        _dispatch(c, state, unit, now, cmds)
    return ended_now


def _dispatch(c: CompiledPlan, state: PlanState, unit: Unit, now: int, cmds: list[Command]) -> None:
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
    if len(state.running) > state.max_in_flight:
        state.max_in_flight = len(state.running)
    cmds.append(command)


# -- ending steps and the run ------------------------------------------------------------------


def _trace(
    c: CompiledPlan, state: PlanState, unit: Unit, r: StepResult, attempt: int, duration: float,
    retries: int, started: int, now: int, dropped: list[str],
) -> None:
    state.trace.append(
        TraceEntry(
            step_id=unit.step_id, node=c.name, block=unit.step_id if unit.follow_up else unit.plan_step,
            capability=r.capability, event=r.event, action=None, attempt=attempt, duration_ms=duration,
            retries=retries, reason=r.reason, error=r.error, prerequisite_of=None, started_ms=started,
            ended_ms=now, dropped_outputs=dropped,
        )
    )


def _end_now(c: CompiledPlan, state: PlanState, step: StepPlan, status: str, event: str, reason: str, error: str, now: int) -> None:
    """End a plan step that never got a worker (skipped, bad reference, missing input)."""
    unit = Unit((step.index, 0, 0), step.id, step.id, step.capability, {}, {})
    result = StepResult(status, event, step.capability.id, {}, error, reason)
    _trace(c, state, unit, result, 0, 0.0, 0, now, now, [])
    _end_unit(c, state, unit, result, now)


def _end_unit(c: CompiledPlan, state: PlanState, unit: Unit, result: StepResult, now: int) -> None:
    if unit.group is not None:
        group = state.groups[unit.group]
        group.results[unit.child] = result
        group.running -= 1
        group.ended += 1
        if group.ended == len(group.results):
            _finish_group(c, state, group, now)
        return
    state.results[unit.step_id] = result
    if unit.follow_up:
        return
    step = c.by_id[unit.plan_step]
    if result.status == SUCCEEDED:
        _compose(c, state, step, unit.params, result.outputs, now)
    assert state.sorter is not None
    state.sorter.done(step.id)


def _finish_group(c: CompiledPlan, state: PlanState, group: FanOut, now: int) -> None:
    """Gather a fan-out in element order: each output key maps to the children's values."""
    step = c.by_id[group.step]
    cap = step.capability
    children = [r for r in group.results if r is not None]
    failed = next(((i, r) for i, r in enumerate(children) if r.status != SUCCEEDED), None)
    if failed is None:
        keys = list(cap.meta.outputs) or list(dict.fromkeys(k for r in children for k in r.outputs))
        gathered = {k: [r.outputs.get(k) for r in children] for k in keys}
        result = StepResult(SUCCEEDED, "success", cap.id, gathered)
    else:
        i, r = failed
        result = StepResult(FAILED, r.event, cap.id, {}, f"fan-out element {group.step}[{i}] ended with {r.event!r}", r.reason)
    del state.groups[group.step]
    unit = Unit(group.key, step.id, step.id, cap, {}, group.params)
    _trace(c, state, unit, result, 0, float(now - group.started_ms), 0, group.started_ms, now, [])
    _end_unit(c, state, unit, result, now)


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
        inputs, missing = resolve_inputs(fu.capability, mapped, _NO_MEMORY, {**state.context, **outputs}, c.defaults)
        unit = Unit((step.index, 1, n), fid, step.id, fu.capability, inputs or {}, mapped, follow_up=True)
        if missing is not None:
            result = StepResult(FAILED, INVALID, fu.capability.id, {}, f"step {fid!r}: required input {missing!r} resolved to nothing", "missing_input")
            _trace(c, state, unit, result, 0, 0.0, 0, now, now, [])
            state.results[fid] = result
            continue
        bisect.insort(state.queue, unit, key=_key)


def _end(c: CompiledPlan, state: PlanState, status: str, error: str | None, now: int, cmds: list[Command]) -> None:
    state.context.update(combine(c, state))
    state.status = status
    state.error = error
    state.ended_ms = now
    cmds.append(RunEnded(state.run_id, status, error))
