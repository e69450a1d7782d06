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


from ontoflow.protocols.context import BlockContract, StepContext, SystemMetadata
from ontoflow.protocols.events import CLARIFICATION, INVALID, is_success
from ontoflow.protocols.types import RunStatusName

from ontoflow.actors.orchestrator.engine import (
    CancelStep,
    Command,
    Dispatch,
    Fact,
    RunCancelled,
    RunEnded,
    RunExpired,
    RunResumed,
    RunSubmitted,
    StepDeadlineExpired,
    StepEnd,
    StepFinished,
    StepLost,
    StepUnavailable,
    TraceEntry,
    cancelled_end,
    describe,
    engine_end,
    outcome_end,
    redispatch,
)
from ontoflow.actors.orchestrator.engine import resolve_inputs  # the workflow engine's resolution order
from ontoflow.actors.orchestrator.engine._suspend import suspend
from ontoflow.actors.orchestrator.plans._asking import asked, resume
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
    if state.status == "suspended" and not isinstance(fact, RunResumed | RunExpired | RunCancelled):
        if not isinstance(fact, _FACTS):
            raise TypeError(f"advance() takes a Fact, got {type(fact).__name__}")
        state.notes.append(f"{describe(fact)} ignored: run suspended")
        return cmds
    if state.status not in ("running", "suspended"):
        if not isinstance(fact, _FACTS):
            raise TypeError(f"advance() takes a Fact, got {type(fact).__name__}")
        state.notes.append(f"{type(fact).__name__} ignored: run already {state.status}")
        return cmds
    match fact:
        case StepFinished():
            _on_finished(compiled, state, fact, cmds)
        case RunSubmitted():
            _on_submitted(compiled, state, fact, cmds)
        case StepDeadlineExpired() | StepUnavailable() | StepLost():
            _on_no_outcome(compiled, state, fact, cmds)
        case RunCancelled():
            _on_cancelled(compiled, state, fact, cmds, "cancelled", f"run cancelled: {fact.reason}")
        case RunResumed():
            resume(state, fact, cmds)
        case RunExpired():
            _on_expired(compiled, state, fact, cmds)
        case _:
            raise TypeError(f"advance() takes a Fact, got {type(fact).__name__}")
    if state.status in ("running", "suspended"):
        # Suspended: a question is open and nothing else can happen until it is answered.
        state.status = "suspended" if state.asking and not state.running and not state.queue else "running"
    return cmds


_FACTS = (StepFinished, RunSubmitted, StepDeadlineExpired, StepUnavailable, StepLost, RunCancelled, RunResumed,
          RunExpired)


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


def _in_flight(state: PlanState, fact: Fact, step_id: str, attempt: int) -> Running | None:
    running = state.running.get(step_id)
    if running is None or running.attempt != attempt:
        state.notes.append(f"stale {describe(fact)} ignored")
        return None
    return running


def _on_finished(c: CompiledPlan, state: PlanState, fact: StepFinished, cmds: list[Command]) -> None:
    outcome = fact.outcome
    if outcome.run_id != state.run_id:
        state.notes.append(f"outcome for run {outcome.run_id} ignored")
        return
    running = _in_flight(state, fact, outcome.step_id, outcome.attempt)
    if running is None:
        return
    del state.running[outcome.step_id]
    cap = running.unit.capability
    end = outcome_end(fact, capability=cap.id, prefix=cap.prefix, declared=cap.outputs, started_ms=running.started_ms)
    if end.event == CLARIFICATION:
        # The step asks a person: it leaves its slot (other steps go on) and waits for an answer.
        _trace(c, state, running.unit, end, action="SUSPEND")
        suspension, command = suspend(state.run_id, end, running.dispatch, outcome.outputs)
        state.asking[outcome.step_id] = (suspension, running)
        cmds.append(command)
        _pump(c, state, fact.now_ms, cmds)
        return
    ok = is_success(end.event)
    _close(c, state, running.unit, end, SUCCEEDED if ok else FAILED, dict(end.outputs) if ok else {})
    _pump(c, state, fact.now_ms, cmds)


def _on_no_outcome(
    c: CompiledPlan, state: PlanState, fact: StepDeadlineExpired | StepUnavailable | StepLost, cmds: list[Command],
) -> None:
    running = _in_flight(state, fact, fact.step_id, fact.attempt)
    if running is None:
        return
    cap = running.unit.capability
    end = engine_end(fact, run_id=state.run_id, capability=cap.id, idempotent=cap.idempotent,
                     started_ms=running.started_ms, cmds=cmds)
    if end is None:
        assert isinstance(fact, StepLost)  # engine_end ends every other fact
        running.dispatch, note = redispatch(running.dispatch, fact, capability=cap.id, budget_ms=cap.budget_ms)
        running.attempt = running.dispatch.attempt
        state.notes.append(note)
        cmds.append(running.dispatch)
        return
    del state.running[fact.step_id]
    _close(c, state, running.unit, end, FAILED, {})
    _pump(c, state, fact.now_ms, cmds)


def _on_expired(c: CompiledPlan, state: PlanState, fact: RunExpired, cmds: list[Command]) -> None:
    found = asked(state, fact)
    if found is None:
        return
    _, suspension, _ = found
    error = f"nobody answered the question of step {suspension.step_id!r} ({suspension.capability}) in time"
    _on_cancelled(c, state, fact, cmds, "expired", error)


def _on_cancelled(c: CompiledPlan, state: PlanState, fact: RunCancelled | RunExpired, cmds: list[Command],
                  status: RunStatusName, error: str) -> None:
    reason = fact.reason if isinstance(fact, RunCancelled) else error
    for _, (suspension, running) in sorted(state.asking.items(), key=lambda kv: kv[1][1].unit.key):
        end = StepEnd(step_id=suspension.step_id, capability=suspension.capability, event=CLARIFICATION,
                      attempt=running.attempt, duration_ms=float(fact.now_ms - running.started_ms),
                      reason=status, error=reason, started_ms=running.started_ms, ended_ms=fact.now_ms)
        _trace(c, state, running.unit, end)
        if running.unit.group is None:
            state.results[running.unit.step_id] = StepResult(FAILED, CLARIFICATION, end.capability, {}, end.error, end.reason)
    state.asking.clear()
    for step_id, running in sorted(state.running.items(), key=lambda kv: kv[1].unit.key):
        cmds.append(CancelStep(state.run_id, step_id, running.attempt))
        end = cancelled_end(RunCancelled(reason=reason, now_ms=fact.now_ms), step_id=step_id,
                            capability=running.unit.capability.id, attempt=running.attempt, started_ms=running.started_ms)
        result = StepResult(CANCELLED, end.event, end.capability, {}, end.error, end.reason)
        _trace(c, state, running.unit, end)
        if running.unit.group is None:
            state.results[running.unit.step_id] = result
    state.running.clear()
    state.queue.clear()
    _end(c, state, status, error, fact.now_ms, cmds)


def _close(c: CompiledPlan, state: PlanState, unit: Unit, end: StepEnd, status: str, outputs: dict[str, Any]) -> None:
    """Record a dispatched unit's end in the trace and its result, then let the plan go on."""
    _trace(c, state, unit, end)
    _end_unit(c, state, unit, StepResult(status, end.event, end.capability, outputs, end.error, end.reason), end.ended_ms)


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
    if not sorter.is_active() and not state.queue and not state.running and not state.asking:
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
            _trace(c, state, unit, _at_once(unit, result, started_ms=now, now=now))
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


def _trace(c: CompiledPlan, state: PlanState, unit: Unit, end: StepEnd, action: str | None = None) -> None:
    state.trace.append(
        TraceEntry(
            step_id=unit.step_id, node=c.name, block=unit.step_id if unit.follow_up else unit.plan_step,
            capability=end.capability, event=end.event, action=action, attempt=end.attempt,
            duration_ms=end.duration_ms, retries=end.retries, reason=end.reason, error=end.error,
            prerequisite_of=None, started_ms=end.started_ms, ended_ms=end.ended_ms, dropped_outputs=end.dropped,
        )
    )


def _at_once(unit: Unit, r: StepResult, *, started_ms: int, now: int) -> StepEnd:
    """The end of a unit the engine ended without a worker (or of a fan-out's gathering)."""
    return StepEnd(step_id=unit.step_id, capability=r.capability, event=r.event, attempt=0,
                   duration_ms=float(now - started_ms), reason=r.reason, error=r.error, started_ms=started_ms,
                   ended_ms=now)


def _end_now(c: CompiledPlan, state: PlanState, step: StepPlan, status: str, event: str, reason: str, error: str, now: int) -> None:
    """End a plan step that never got a worker (skipped, bad reference, missing input)."""
    unit = Unit((step.index, 0, 0), step.id, step.id, step.capability, {}, {})
    result = StepResult(status, event, step.capability.id, {}, error, reason)
    _trace(c, state, unit, _at_once(unit, result, started_ms=now, now=now))
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
        keys = list(cap.meta.outputs)  # the outputs rule: only declared keys travel on (engine._step_end)
        gathered = {k: [r.outputs.get(k) for r in children] for k in keys}
        result = StepResult(SUCCEEDED, "success", cap.id, gathered)
    else:
        i, r = failed
        result = StepResult(FAILED, r.event, cap.id, {}, f"fan-out element {group.step}[{i}] ended with {r.event!r}", r.reason)
    del state.groups[group.step]
    unit = Unit(group.key, step.id, step.id, cap, {}, group.params)
    _trace(c, state, unit, _at_once(unit, result, started_ms=group.started_ms, now=now))
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
            _trace(c, state, unit, _at_once(unit, result, started_ms=now, now=now))
            state.results[fid] = result
            continue
        bisect.insort(state.queue, unit, key=_key)


def _end(c: CompiledPlan, state: PlanState, status: RunStatusName, error: str | None, now: int, cmds: list[Command]) -> None:
    state.context.update(combine(c, state))
    state.status = status
    state.error = error
    state.ended_ms = now
    cmds.append(RunEnded(state.run_id, status, error))
