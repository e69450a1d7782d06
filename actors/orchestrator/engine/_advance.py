"""The one decision function: a run's state and a fact in, commands out.

sans-IO in the manner of h11: no sockets, no clock (time comes in on each fact), no randomness,
no logging (things worth logging go to ``state.notes`` for the shell). The same state and the
same fact always give the same commands and the same new state, so a journal of facts replays a
run exactly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ontoflow.protocols.context import Segment
from ontoflow.protocols.manifest import Jump
from ontoflow.protocols.events import CLARIFICATION, RESERVED_EVENTS  # success: not reserved (``events.is_success``, tested in line: per fact, no call)

from ontoflow.actors.orchestrator.engine._commands import CancelStep, Command
from ontoflow.actors.orchestrator.engine._facts import (
    Fact,
    RunCancelled,
    RunExpired,
    RunResumed,
    RunSubmitted,
    StepDeadlineExpired,
    StepFinished,
    StepLost,
    StepUnavailable,
)
from ontoflow.actors.orchestrator.engine._state import PendingStep, RunState
from ontoflow.actors.orchestrator.engine._step_end import (
    StepEnd,
    TraceEntry,
    admit,
    cancelled_end,
    describe,
    engine_end,
    note_stale,
    outcome_end,
    redispatch,
    split_outputs,
)
from ontoflow.actors.orchestrator.engine._steps import (
    close_step, dispatch_step, drive, end_run, finish_block_step, note_failure, take_route,
)
from ontoflow.actors.orchestrator.engine._suspend import ANSWER_KEY, check_answer, resumed_dispatch, suspend

if TYPE_CHECKING:  # annotations only: ``_compile`` imports this module's ``advance``
    from ontoflow.actors.orchestrator.engine._compile import CapabilityPlan, CompiledWorkflow

__all__ = ["advance"]


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
    # The two facts of every run by exact type first: a class pattern costs about 640
    # instructions when it matches (``__instancecheck__`` of a Struct type) and more when it fails.
    kind = type(fact)
    if state.status == "running" and (kind is StepFinished or kind is RunSubmitted):  # ``admit``'s yes, no call
        if kind is StepFinished:
            _on_finished(workflow, state, fact, cmds)
        else:
            _on_submitted(workflow, state, fact, cmds)
        return cmds
    if not admit(state, fact):
        return cmds
    match fact:
        case StepFinished():
            _on_finished(workflow, state, fact, cmds)
        case RunSubmitted():
            _on_submitted(workflow, state, fact, cmds)
        case StepDeadlineExpired() | StepUnavailable() | StepLost():
            _on_no_outcome(workflow, state, fact, cmds)
        case RunCancelled():
            _on_cancelled(workflow, state, fact, cmds)
        case RunResumed() | RunExpired() if state.status != "suspended":
            state.notes.append(f"{describe(fact)} ignored: the run asks no question")
        case RunResumed():
            _on_resumed(workflow, state, fact, cmds)
        case RunExpired():
            _on_expired(workflow, state, fact, cmds)
    return cmds


def _pending_for(state: RunState, fact: Fact, step_id: str, attempt: int) -> PendingStep | None:
    """The pending step if the fact is about it; otherwise note the stale fact."""
    pending = state.pending
    if pending is None or pending.step_id != step_id or pending.attempt != attempt:
        note_stale(state, fact)
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
    node = workflow.nodes[state.node]
    state.block = node.entry_block
    block = node.blocks[state.block]
    if block.capability.requires:
        drive(workflow, state, fact.now_ms, cmds)
        return
    # ``drive``'s first turn in line for a capability that requires nothing (the usual one), as below.
    done = dispatch_step(workflow, state, block, block.capability, None, fact.now_ms, cmds)
    if done is not None and finish_block_step(workflow, state, block, done, cmds):
        drive(workflow, state, fact.now_ms, cmds, ended_at_once=1)


def _on_finished(workflow: CompiledWorkflow, state: RunState, fact: StepFinished, cmds: list[Command]) -> None:
    outcome = fact.outcome
    pending = state.pending
    if pending is None or pending.step_id != outcome.step_id or pending.attempt != outcome.attempt:
        _pending_for(state, fact, outcome.step_id, outcome.attempt)  # not the pending step: noted as stale
        return
    if outcome.run_id != state.run_id:
        state.notes.append(f"stale {describe(fact)} ignored: it is for run {outcome.run_id}")
        return
    cap = workflow.capabilities[pending.capability]
    event = outcome.event
    if event.startswith(cap.prefix):
        event = event[len(cap.prefix) :]
    if pending.prerequisite_of is not None or event == CLARIFICATION or (cap.events and event not in cap.events):
        _answered_otherwise(workflow, state, fact, pending, cap, cmds)
        return
    # The usual outcome: a block's own step answered with a declared event other than a question.
    # What ``outcome_end`` and ``finish_block_step`` do, in line (the same state and commands):
    # no ``StepEnd`` record and four calls fewer, per step.
    now_ms = fact.now_ms
    if outcome.outputs:
        kept, dropped = split_outputs(outcome.outputs, cap.outputs)
    else:  # the usual no-output step: two names set, no tuple made and unpacked
        kept, dropped = None, []
    _take_answer(state, pending, cap.id, event, kept, outcome.segments)
    failed = event in RESERVED_EVENTS
    block = workflow.nodes[pending.node].blocks[pending.block]
    route = block.actions.get(event) or block.fail_default
    state.trace.append(TraceEntry(  # positional, in the order of its fields (per step)
        outcome.step_id, block.node, block.block, cap.id, event,  # step_id, node, block, capability, event
        None if route is None else route.text, outcome.attempt, outcome.duration_ms,  # action, attempt, duration_ms
        outcome.retries, outcome.reason, outcome.error, None,  # retries, reason, error, prerequisite_of
        pending.started_ms, now_ms, dropped,  # started_ms, ended_ms, dropped_outputs
    ))
    if failed:
        note_failure(state, block, cap.id, event, outcome.reason, outcome.error)
    if route is not None and type(route.action) is Jump:  # ``take_route``'s usual route, in line
        state.block = route.action.block
    elif not take_route(workflow, state, block, route, event, outcome.step_id, now_ms, cmds):
        return
    # ``drive``'s first turn in line for a capability that requires nothing (the usual one).
    following = workflow.nodes[state.node].blocks[state.block]
    if following.capability.requires:
        drive(workflow, state, now_ms, cmds)
        return
    done = dispatch_step(workflow, state, following, following.capability, None, now_ms, cmds)
    if done is not None and finish_block_step(workflow, state, following, done, cmds):
        drive(workflow, state, now_ms, cmds, ended_at_once=1)  # it ended at once (a missing input): on, as ``drive`` goes


def _take_answer(state: RunState, pending: PendingStep, capability: str, event: str, outputs: dict[str, Any] | None,
                 segments: list[Segment]) -> None:
    """The pending step answered with ``event``: it is no longer pending, its kept ``outputs``
    go into the context, its segments into the payload, and a success is noted."""
    state.pending = None
    if outputs:
        state.context.update(outputs)
    if segments:
        _keep_segments(state, pending, segments)
    if event not in RESERVED_EVENTS and capability not in state.succeeded:
        state.succeeded.append(capability)


def _keep_segments(state: RunState, pending: PendingStep, segments: list[Segment]) -> None:
    """Append an answered step's segments to the run's payload, each named after the step."""
    payload, step_id, where = state.payload, pending.step_id, pending.block
    for n, segment in enumerate(segments, 1):
        payload.append(Segment(f"{step_id}.{n}", segment.type, segment.content, where))


def _answered_otherwise(workflow: CompiledWorkflow, state: RunState, fact: StepFinished, pending: PendingStep,
                        cap: CapabilityPlan, cmds: list[Command]) -> None:
    """The pending step answered, and it is a prerequisite, or asks a question, or its event
    is not one the capability declares (``outcome_end`` ends it ``failure``)."""
    outcome = fact.outcome
    end = outcome_end(fact, capability=cap.id, prefix=cap.prefix, declared=cap.outputs, started_ms=pending.started_ms,
                      events=cap.events)
    if end.event == CLARIFICATION:
        _suspend(workflow, state, pending, end, outcome.outputs, cmds)
        return
    # An event the capability does not declare was ended ``failure`` with its outputs dropped:
    # its segments are dropped too (as the capability base drops them), not shown to later steps.
    undeclared = end.event != outcome.event.removeprefix(cap.prefix)
    _take_answer(state, pending, cap.id, end.event, end.outputs, [] if undeclared else outcome.segments)
    _route(workflow, state, pending, end, cmds)


def _route(workflow: CompiledWorkflow, state: RunState, pending: PendingStep, end: StepEnd, cmds: list[Command]) -> None:
    """Record the pending step's end and go on: a prerequisite's end lets its block go on, a
    block's own step is routed by its transitions."""
    block = workflow.nodes[pending.node].blocks[pending.block]
    if pending.prerequisite_of is not None:
        close_step(state, block, end, prerequisite_of=pending.prerequisite_of)
        if end.event in RESERVED_EVENTS:
            state.failed_prereqs[end.capability] = end.event
        drive(workflow, state, end.ended_ms, cmds)
    elif finish_block_step(workflow, state, block, end, cmds):
        drive(workflow, state, end.ended_ms, cmds)


def _on_no_outcome(
    workflow: CompiledWorkflow, state: RunState, fact: StepDeadlineExpired | StepUnavailable | StepLost,
    cmds: list[Command],
) -> None:
    pending = _pending_for(state, fact, fact.step_id, fact.attempt)
    if pending is None:
        return
    cap = workflow.capabilities[pending.capability]
    end = engine_end(fact, run_id=state.run_id, capability=cap.id, idempotent=cap.idempotent,
                     started_ms=pending.started_ms, cmds=cmds)
    if end is not None:
        state.pending = None
        _route(workflow, state, pending, end, cmds)
        return
    assert isinstance(fact, StepLost)  # engine_end ends every other fact
    if pending.prerequisite_of is None:
        budget = workflow.nodes[pending.node].blocks[pending.block].budget_ms
    else:
        budget = cap.budget_ms
    pending.dispatch, note = redispatch(pending.dispatch, fact, capability=cap.id, budget_ms=budget)
    pending.attempt = pending.dispatch.attempt
    state.notes.append(note)
    cmds.append(pending.dispatch)


def _suspend(workflow: CompiledWorkflow, state: RunState, pending: PendingStep, end: StepEnd,
             outputs: dict[str, Any], cmds: list[Command]) -> None:
    """The pending step asked a question: it stays pending, nothing in flight, the run waits."""
    block = workflow.nodes[pending.node].blocks[pending.block]
    close_step(state, block, end, action="SUSPEND", prerequisite_of=pending.prerequisite_of)
    state.suspension, command = suspend(state.run_id, end, pending.dispatch, outputs)
    state.status = "suspended"
    cmds.append(command)


def _answered(state: RunState, fact: RunResumed | RunExpired) -> bool:
    """Whether ``fact`` names the question the run asks; else a note."""
    suspension = state.suspension
    if suspension is None or fact.token != suspension.token:
        state.notes.append(f"{describe(fact)} ignored: stale or wrong token")
        return False
    return True


def _on_resumed(workflow: CompiledWorkflow, state: RunState, fact: RunResumed, cmds: list[Command]) -> None:
    suspension, pending = state.suspension, state.pending
    if not _answered(state, fact):
        return
    assert suspension is not None and pending is not None  # set together by _suspend
    refused = check_answer(suspension, fact.answer)
    if refused is not None:
        state.notes.append(f"RunResumed ignored: {refused}")
        return
    state.suspension = None
    state.status = "running"
    state.context[ANSWER_KEY] = fact.answer
    block = workflow.nodes[pending.node].blocks[pending.block]
    if pending.prerequisite_of is None and CLARIFICATION in block.actions:
        # The workflow routes the question itself: the step ended, the answer is in the context.
        state.pending = None
        end = StepEnd(step_id=pending.step_id, capability=pending.capability, event=CLARIFICATION,
                      attempt=pending.attempt, duration_ms=float(fact.now_ms - pending.started_ms),
                      reason="answered", started_ms=pending.started_ms, ended_ms=fact.now_ms)
        if finish_block_step(workflow, state, block, end, cmds):
            drive(workflow, state, fact.now_ms, cmds)
        return
    budget = block.budget_ms if pending.prerequisite_of is None else workflow.capabilities[pending.capability].budget_ms
    pending.dispatch = resumed_dispatch(suspension, fact.answer, fact.now_ms, budget)
    pending.attempt = pending.dispatch.attempt
    state.notes.append(f"step {pending.step_id} answered; dispatched again as attempt {pending.attempt}")
    cmds.append(pending.dispatch)


def _on_expired(workflow: CompiledWorkflow, state: RunState, fact: RunExpired, cmds: list[Command]) -> None:
    suspension, pending = state.suspension, state.pending
    if not _answered(state, fact):
        return
    assert suspension is not None and pending is not None
    state.suspension = None
    error = f"nobody answered the question of step {suspension.step_id} ('{suspension.capability}') in time"
    end_run(state, "expired", error, fact.now_ms, cmds)


def _on_cancelled(workflow: CompiledWorkflow, state: RunState, fact: RunCancelled, cmds: list[Command]) -> None:
    pending = state.pending
    if pending is not None and state.suspension is not None:
        state.suspension = None  # nothing in flight: no CancelStep, the question's record is the trace's
    elif pending is not None:
        cmds.append(CancelStep(state.run_id, pending.step_id, pending.attempt))
        block = workflow.nodes[pending.node].blocks[pending.block]
        end = cancelled_end(fact, step_id=pending.step_id, capability=pending.capability, attempt=pending.attempt,
                            started_ms=pending.started_ms)
        close_step(state, block, end, prerequisite_of=pending.prerequisite_of)
    end_run(state, "cancelled", f"run cancelled: {fact.reason}", fact.now_ms, cmds)
