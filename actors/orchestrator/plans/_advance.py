"""The plan's decision function: a run's state and a fact in, commands out.

sans-IO like the workflow engine: no clock (time comes in on each fact), no I/O, no logging
(notes go to ``state.notes``). Which facts a run takes at all is the engines' shared gate
(``engine.admit``); how a step in flight ends is the engines' shared ``StepEnd``
(``engine._step_end``); what this module adds is where the end goes: scheduling in
``_schedule`` (a step begins when its dependencies ended, waits for a slot), units, fan-outs
and the run's end in ``_ending``, questions in ``_asking``. Several ``Dispatch`` commands
may come out of one fact.
"""

from __future__ import annotations

import graphlib

from ontoflow.protocols.events import CLARIFICATION, is_success
from ontoflow.protocols.types import RunStatusName

from ontoflow.actors.orchestrator.engine import (
    CancelStep,
    Command,
    Fact,
    RunCancelled,
    RunExpired,
    RunResumed,
    RunSubmitted,
    StepDeadlineExpired,
    StepEnd,
    StepFinished,
    StepLost,
    StepUnavailable,
    admit,
    cancelled_end,
    engine_end,
    note_stale,
    outcome_end,
    redispatch,
)
from ontoflow.actors.orchestrator.engine._suspend import suspend
from ontoflow.actors.orchestrator.plans._asking import asked, resume
from ontoflow.actors.orchestrator.plans._compile import CompiledPlan
from ontoflow.actors.orchestrator.plans._ending import close, end_run, trace
from ontoflow.actors.orchestrator.plans._schedule import pump
from ontoflow.actors.orchestrator.plans._state import CANCELLED, FAILED, SUCCEEDED, PlanState, Running, StepResult, Unit

__all__ = ["advance"]


def advance(compiled: CompiledPlan, state: PlanState, fact: Fact) -> list[Command]:
    """Apply ``fact`` to ``state`` (in place) and return the commands to carry out.

    A fact about a step or attempt not in flight, or arriving after the run ended, only adds
    a note. A run that ends emits exactly one :class:`RunEnded`.

    Args:
        compiled: the compiled plan the run follows.
        state: the run's state, owned by the caller and changed in place.
        fact: what happened.

    Returns:
        The commands, in the order the shell must carry them out.

    Raises:
        TypeError: when ``fact`` is not one of the engine's facts.
    """
    cmds: list[Command] = []
    if not admit(state, fact):
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
            resume(state, fact)
            pump(compiled, state, fact.now_ms, cmds)
        case RunExpired():
            _on_expired(compiled, state, fact, cmds)
    if state.status in ("running", "suspended"):
        # Suspended: a question is open and nothing else can happen until it is answered.
        state.status = "suspended" if state.asking and not state.running and not state.queue else "running"
    return cmds


def _on_submitted(c: CompiledPlan, state: PlanState, fact: RunSubmitted, cmds: list[Command]) -> None:
    if state.started_ms is not None or fact.run_id != state.run_id:
        state.notes.append("RunSubmitted ignored: already submitted or for another run")
        return
    state.started_ms = fact.now_ms
    state.context = dict(fact.inputs)
    sorter: graphlib.TopologicalSorter[str] = graphlib.TopologicalSorter({s.id: s.deps for s in c.steps})
    sorter.prepare()
    state.sorter = sorter
    pump(c, state, fact.now_ms, cmds)


def _in_flight(state: PlanState, fact: Fact, step_id: str, attempt: int) -> Running | None:
    running = state.running.get(step_id)
    if running is None or running.attempt != attempt:
        note_stale(state, fact)
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
    end = outcome_end(fact, capability=cap.id, prefix=cap.prefix, declared=cap.outputs, started_ms=running.started_ms,
                      events=cap.events)
    if end.event == CLARIFICATION:
        # The step asks a person: it leaves its slot (other steps go on) and waits for an answer;
        # a fan-out child leaves its fan-out's slot too: held, with the rest of the fan-out
        # waiting behind it, the run was neither going on nor "suspended", nothing in flight.
        trace(c, state, running.unit, end, action="SUSPEND")
        if running.unit.group is not None:
            state.groups[running.unit.group].running -= 1
        suspension, command = suspend(state.run_id, end, running.dispatch, outcome.outputs)
        state.asking[outcome.step_id] = (suspension, running)
        cmds.append(command)
        pump(c, state, fact.now_ms, cmds)
        return
    ok = is_success(end.event)
    close(c, state, running.unit, end, SUCCEEDED if ok else FAILED, dict(end.outputs) if ok else {})
    pump(c, state, fact.now_ms, cmds)


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
    close(c, state, running.unit, end, FAILED, {})
    pump(c, state, fact.now_ms, cmds)


def _on_expired(c: CompiledPlan, state: PlanState, fact: RunExpired, cmds: list[Command]) -> None:
    found = asked(state, fact)
    if found is None:
        return
    _, suspension, _ = found
    error = f"nobody answered the question of step {suspension.step_id!r} ({suspension.capability}) in time"
    _on_cancelled(c, state, fact, cmds, "expired", error)


def _on_cancelled(c: CompiledPlan, state: PlanState, fact: RunCancelled | RunExpired, cmds: list[Command],
                  status: RunStatusName, error: str) -> None:
    """End every open question and every attempt in flight, drop the queue, end the run."""
    reason = fact.reason if isinstance(fact, RunCancelled) else error
    for _, (suspension, running) in sorted(state.asking.items(), key=lambda kv: kv[1][1].unit.key):
        end = StepEnd(step_id=suspension.step_id, capability=suspension.capability, event=CLARIFICATION,
                      attempt=running.attempt, duration_ms=float(fact.now_ms - running.started_ms),
                      reason=status, error=reason, started_ms=running.started_ms, ended_ms=fact.now_ms)
        trace(c, state, running.unit, end)
        if running.unit.group is None:
            state.results[running.unit.step_id] = StepResult(FAILED, CLARIFICATION, end.capability, {}, end.error, end.reason)
    state.asking.clear()
    for step_id, running in sorted(state.running.items(), key=lambda kv: kv[1].unit.key):
        cmds.append(CancelStep(state.run_id, step_id, running.attempt))
        end = cancelled_end(RunCancelled(reason=reason, now_ms=fact.now_ms), step_id=step_id,
                            capability=running.unit.capability.id, attempt=running.attempt, started_ms=running.started_ms)
        trace(c, state, running.unit, end)
        if running.unit.group is None:
            state.results[running.unit.step_id] = StepResult(CANCELLED, end.event, end.capability, {}, end.error, end.reason)
    state.running.clear()
    _never_ran(c, state, fact, reason)
    state.queue.clear()
    end_run(c, state, status, error, fact.now_ms, cmds)


def _never_ran(c: CompiledPlan, state: PlanState, fact: RunCancelled | RunExpired, reason: str) -> None:
    """Record as cancelled what the run's end leaves without a result, so that the combined
    output (``ontoflow.plan.steps``, a report) names every step: a fan-out under way, a
    step answered and waiting for a slot (traced: it ran and asked), a step or follow-up
    queued or not begun. Cancelling mid-fan-out once reported no step at all."""
    for item in state.queue:
        if isinstance(item, Unit) and item.resumed is not None:
            suspension, _, started_ms = item.resumed
            end = cancelled_end(RunCancelled(reason=reason, now_ms=fact.now_ms), step_id=item.step_id,
                                capability=item.capability.id, attempt=suspension.dispatch.attempt, started_ms=started_ms)
            trace(c, state, item, end)
        if isinstance(item, Unit) and item.group is None:
            state.results[item.step_id] = StepResult(CANCELLED, CANCELLED, item.capability.id, {}, reason, "run_cancelled")
    for step in c.steps:
        if step.id not in state.results:
            state.results[step.id] = StepResult(CANCELLED, CANCELLED, step.capability.id, {}, reason, "run_cancelled")
