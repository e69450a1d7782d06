"""The one decision function: a run's state and a fact in, commands out.

sans-IO in the manner of h11: no sockets, no clock (time comes in on each fact), no randomness,
no logging (things worth logging go to ``state.notes`` for the shell). The same state and the
same fact always give the same commands and the same new state, so a journal of facts replays a
run exactly.
"""

from __future__ import annotations

import msgspec

from ontoflow.protocols.context import Segment
from ontoflow.protocols.events import CANCELLED as CANCELLED_EVENT
from ontoflow.protocols.events import FAILURE, TIMEOUT, UNAVAILABLE, is_success

from ontoflow.actors.orchestrator.engine._commands import CancelStep, Command
from ontoflow.actors.orchestrator.engine._compile import CompiledWorkflow
from ontoflow.actors.orchestrator.engine._facts import (
    Fact,
    RunCancelled,
    RunSubmitted,
    StepDeadlineExpired,
    StepFinished,
    StepLost,
    StepUnavailable,
)
from ontoflow.actors.orchestrator.engine._state import CANCELLED, RUNNING, PendingStep, RunState
from ontoflow.actors.orchestrator.engine._steps import close_step, drive, end_run, finish_block_step

__all__ = ["advance"]

_replace = msgspec.structs.replace


def advance(workflow: CompiledWorkflow, state: RunState, fact: Fact) -> list[Command]:
    """Apply ``fact`` to ``state`` (in place) and return the commands the shell must carry out.

    A fact about another step or attempt than the pending one, or arriving after the run
    ended, changes nothing but ``state.notes`` and returns ``[]``. A run that ends emits
    exactly one :class:`RunEnded`.

    Args:
        workflow: the compiled manifest the run follows.
        state: the run's state, owned by the caller and changed in place.
        fact: what happened.

    Returns:
        The commands, in the order the shell must carry them out.

    Raises:
        TypeError: when ``fact`` is not one of the :data:`Fact` types.
    """
    cmds: list[Command] = []
    kind = type(fact)
    if state.status != RUNNING:
        state.notes.append(f"{_describe(fact)} ignored: run already {state.status}")
    elif kind is StepFinished:
        _on_finished(workflow, state, fact, cmds)  # type: ignore[arg-type]
    elif kind is RunSubmitted:
        _on_submitted(workflow, state, fact, cmds)  # type: ignore[arg-type]
    elif kind is StepDeadlineExpired:
        _on_deadline(workflow, state, fact, cmds)  # type: ignore[arg-type]
    elif kind is StepUnavailable:
        _on_unavailable(workflow, state, fact, cmds)  # type: ignore[arg-type]
    elif kind is StepLost:
        _on_lost(workflow, state, fact, cmds)  # type: ignore[arg-type]
    elif kind is RunCancelled:
        _on_cancelled(workflow, state, fact, cmds)  # type: ignore[arg-type]
    else:
        raise TypeError(f"advance() takes a Fact, got {kind.__name__}")
    return cmds


def _describe(fact: Fact) -> str:
    """A short name for a fact in a note (never its values)."""
    if isinstance(fact, StepFinished):
        return f"outcome {fact.outcome.step_id}/{fact.outcome.attempt}"
    if isinstance(fact, StepDeadlineExpired | StepUnavailable | StepLost):
        return f"{type(fact).__name__} {fact.step_id}/{fact.attempt}"
    return type(fact).__name__


def _pending_for(state: RunState, fact: Fact, step_id: str, attempt: int) -> PendingStep | None:
    """The pending step if the fact is about it; otherwise note the stale fact."""
    pending = state.pending
    if pending is None or pending.step_id != step_id or pending.attempt != attempt:
        state.notes.append(f"stale {_describe(fact)} ignored")
        return None
    return pending


def _on_submitted(workflow: CompiledWorkflow, state: RunState, fact: RunSubmitted, cmds: list[Command]) -> None:
    if state.started_ms is not None:
        state.notes.append("RunSubmitted ignored: run already submitted")
        return
    if fact.run_id != state.run_id:
        state.notes.append(f"RunSubmitted ignored: it is for run {fact.run_id}")
        return
    state.started_ms = fact.now_ms
    state.context = dict(fact.inputs)
    state.node = workflow.manifest.start
    state.block = workflow.nodes[state.node].entry_block
    drive(workflow, state, fact.now_ms, cmds)


def _on_finished(workflow: CompiledWorkflow, state: RunState, fact: StepFinished, cmds: list[Command]) -> None:
    outcome = fact.outcome
    pending = _pending_for(state, fact, outcome.step_id, outcome.attempt)
    if pending is None:
        return
    if outcome.run_id != state.run_id:
        state.notes.append(f"stale {_describe(fact)} ignored: it is for run {outcome.run_id}")
        return
    state.pending = None
    now_ms = fact.now_ms
    block = workflow.nodes[pending.node].blocks[pending.block]
    cap = workflow.capabilities[pending.capability]
    event = outcome.event
    if event.startswith(cap.prefix):  # a full event name: keep the short one
        event = event[len(cap.prefix) :]
    dropped: list[str] = []
    if outcome.outputs:
        declared, context = cap.outputs, state.context
        for key, value in outcome.outputs.items():
            if key in declared:
                context[key] = value
            else:
                dropped.append(key)
    if outcome.segments:
        payload, step_id, where = state.payload, pending.step_id, pending.block
        for n, segment in enumerate(outcome.segments, 1):
            payload.append(Segment(f"{step_id}.{n}", segment.type, segment.content, where))
    success = is_success(event)
    if success and cap.id not in state.succeeded:
        state.succeeded.append(cap.id)
    if pending.prerequisite_of is not None:
        close_step(state, block, pending.step_id, cap.id, event, None, pending.attempt, outcome.duration_ms,
                   outcome.retries, outcome.reason, outcome.error, pending.prerequisite_of, pending.started_ms,
                   now_ms, dropped)
        if not success:
            state.failed_prereqs[cap.id] = event
        drive(workflow, state, now_ms, cmds)
    elif finish_block_step(workflow, state, block, pending.step_id, event, pending.attempt, outcome.duration_ms,
                           outcome.retries, outcome.reason, outcome.error, pending.started_ms, now_ms, dropped, cmds):
        drive(workflow, state, now_ms, cmds)


def _end_pending(
    workflow: CompiledWorkflow,
    state: RunState,
    pending: PendingStep,
    event: str,
    reason: str,
    error: str,
    now_ms: int,
    cmds: list[Command],
) -> None:
    """End the pending step with an event the engine decided, then go on as for an outcome."""
    state.pending = None
    block = workflow.nodes[pending.node].blocks[pending.block]
    duration = float(now_ms - pending.started_ms)
    if pending.prerequisite_of is not None:
        close_step(state, block, pending.step_id, pending.capability, event, None, pending.attempt, duration, 0,
                   reason, error, pending.prerequisite_of, pending.started_ms, now_ms, [])
        state.failed_prereqs[pending.capability] = event
        drive(workflow, state, now_ms, cmds)
    elif finish_block_step(workflow, state, block, pending.step_id, event, pending.attempt, duration, 0,
                           reason, error, pending.started_ms, now_ms, [], cmds):
        drive(workflow, state, now_ms, cmds)


def _on_deadline(workflow: CompiledWorkflow, state: RunState, fact: StepDeadlineExpired, cmds: list[Command]) -> None:
    pending = _pending_for(state, fact, fact.step_id, fact.attempt)
    if pending is None:
        return
    cmds.append(CancelStep(state.run_id, pending.step_id, pending.attempt))
    error = f"step {pending.step_id} of '{pending.capability}' passed its deadline without an outcome"
    _end_pending(workflow, state, pending, TIMEOUT, "deadline", error, fact.now_ms, cmds)


def _on_unavailable(workflow: CompiledWorkflow, state: RunState, fact: StepUnavailable, cmds: list[Command]) -> None:
    pending = _pending_for(state, fact, fact.step_id, fact.attempt)
    if pending is None:
        return
    error = f"no live worker offered '{pending.capability}' in time"
    _end_pending(workflow, state, pending, UNAVAILABLE, "no_worker", error, fact.now_ms, cmds)


def _on_lost(workflow: CompiledWorkflow, state: RunState, fact: StepLost, cmds: list[Command]) -> None:
    pending = _pending_for(state, fact, fact.step_id, fact.attempt)
    if pending is None:
        return
    cap = workflow.capabilities[pending.capability]
    if not cap.idempotent:
        error = f"step {pending.step_id} of '{cap.id}' was lost ({fact.reason}) and the capability is not idempotent"
        _end_pending(workflow, state, pending, FAILURE, fact.reason, error, fact.now_ms, cmds)
        return
    if pending.prerequisite_of is None:
        budget = workflow.nodes[pending.node].blocks[pending.block].budget_ms
    else:
        budget = cap.budget_ms
    pending.attempt += 1
    pending.dispatch = _replace(
        pending.dispatch,
        attempt=pending.attempt,
        deadline_at_ms=None if budget is None else fact.now_ms + budget,
    )
    state.notes.append(
        f"step {pending.step_id} of '{cap.id}' lost ({fact.reason}) on attempt {fact.attempt}; "
        f"dispatched again as attempt {pending.attempt}"
    )
    cmds.append(pending.dispatch)


def _on_cancelled(workflow: CompiledWorkflow, state: RunState, fact: RunCancelled, cmds: list[Command]) -> None:
    pending = state.pending
    if pending is not None:
        cmds.append(CancelStep(state.run_id, pending.step_id, pending.attempt))
        block = workflow.nodes[pending.node].blocks[pending.block]
        close_step(state, block, pending.step_id, pending.capability, CANCELLED_EVENT, None, pending.attempt,
                   float(fact.now_ms - pending.started_ms), 0, "run_cancelled", fact.reason,
                   pending.prerequisite_of, pending.started_ms, fact.now_ms, [])
    end_run(state, CANCELLED, f"run cancelled: {fact.reason}", fact.now_ms, cmds)
