"""The state of one run: everything :func:`advance` reads and writes.

The caller owns a :class:`RunState` and :func:`advance` mutates it in place (no copy per step:
the engine must decide a step in microseconds). A snapshot is ``msgspec.msgpack.encode(state)``
and ``msgspec.msgpack.decode(data, type=RunState)`` restores it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from ontoflow.protocols.context import Segment
from ontoflow.protocols.types import RunStatusName

from ontoflow.actors.orchestrator.engine._commands import Dispatch
from ontoflow.actors.orchestrator.engine._suspend import Suspension

if TYPE_CHECKING:
    from ontoflow.actors.orchestrator.engine._compile import CompiledWorkflow
    from ontoflow.actors.orchestrator.engine._step_end import StepEnd

__all__ = ["Frame", "PendingStep", "RunState", "TraceEntry", "new_run", "trace_entry"]

class Frame(msgspec.Struct, frozen=True, array_like=True):
    """A return address pushed by ``CALL``.

    ``block`` is ``None`` when the calling block was the last of its node: returning there
    returns again (an implicit ``RETURN``).
    """

    node: str
    block: str | None


class TraceEntry(msgspec.Struct, frozen=True, kw_only=True):
    """The record of one finished step.

    Attributes:
        step_id: ``s1``, ``s2``...
        node: the node of the block the step ran for.
        block: that block.
        capability: the capability the step ran (a prerequisite's own id for prerequisites).
        event: the short event the step ended with.
        action: the transition's action taken, ``None`` when the run ended there or the step
            was a prerequisite (prerequisites are not routed).
        attempt: the last attempt; 0 when the engine ended the step without dispatching it
            (``invalid``, ``prerequisite_failed``).
        duration_ms: the worker's measure when an outcome arrived, else the time since dispatch.
        retries: the capability base's retries (from the outcome).
        reason: why a failure happened (``error``, ``worker_lost``, ``deadline``...).
        error: the human-readable error, if any.
        prerequisite_of: the capability this step was a prerequisite of, else ``None``.
        started_ms: first dispatch (or decision) time.
        ended_ms: when the step ended.
        dropped_outputs: output keys the capability does not declare, not merged.
    """

    step_id: str
    node: str
    block: str
    capability: str
    event: str
    action: str | None
    attempt: int
    duration_ms: float
    retries: int
    reason: str | None
    error: str | None
    prerequisite_of: str | None
    started_ms: int
    ended_ms: int
    dropped_outputs: list[str] = []


def trace_entry(end: StepEnd, *, node: str, block: str, action: str | None = None,
                prerequisite_of: str | None = None) -> TraceEntry:
    """The trace entry of a step that ended as ``end`` says, for every engine alike.

    Args:
        end: how the step ended.
        node: where it ran (a workflow node; a plan's name).
        block: the block it ran for (a plan step's id).
        action: the transition's action taken, if any (``SUSPEND`` for a question).
        prerequisite_of: the capability the step was a prerequisite of, if it was one.

    Returns:
        The entry; its times, attempt, failure record and dropped outputs are ``end``'s.
    """
    return TraceEntry(
        step_id=end.step_id, node=node, block=block, capability=end.capability, event=end.event, action=action,
        attempt=end.attempt, duration_ms=end.duration_ms, retries=end.retries, reason=end.reason, error=end.error,
        prerequisite_of=prerequisite_of, started_ms=end.started_ms, ended_ms=end.ended_ms,
        dropped_outputs=end.dropped,
    )


class PendingStep(msgspec.Struct, kw_only=True):
    """The step in flight: at most one per run.

    ``dispatch`` is the last command sent for it, so that a shell recovering from a snapshot can
    send it again and a lost idempotent step is re-sent unchanged but for attempt and deadline.
    """

    step_id: str
    attempt: int
    node: str
    block: str
    capability: str
    prerequisite_of: str | None
    started_ms: int
    dispatch: Dispatch


class RunState(msgspec.Struct, kw_only=True):
    """One run's mutable state; :func:`advance` changes it in place, the caller owns it.

    Attributes:
        run_id: the run.
        status: ``running``, ``suspended`` (``pending`` asked a question: ``suspension``),
            ``completed``, ``failed``, ``cancelled`` or ``expired``.
        node: the current node (empty before :class:`RunSubmitted`).
        block: the current block of ``node``.
        stack: return addresses, innermost last.
        context: the context bus: submitted inputs, merged outputs and ``ontoflow.*`` keys.
        payload: every segment the run's steps produced, oldest first.
        succeeded: capability ids that succeeded in this run, in order of first success.
        failed_prereqs: prerequisite capability id -> the event its one attempt ended with.
        pending: the step in flight, if any.
        step_seq: the number of the last step id handed out.
        steps_taken: steps begun, prerequisites and undispatched steps included.
        trace: one entry per finished step.
        notes: things the shell should log (ignored facts, re-dispatches); the shell may clear it.
        error: why the run failed or was cancelled.
        started_ms: time of :class:`RunSubmitted`, ``None`` before.
        ended_ms: time the run ended, ``None`` while running.
        suspension: the question ``pending`` asked, while the run is suspended.
    """

    run_id: str
    status: RunStatusName = "running"
    node: str = ""
    block: str = ""
    stack: list[Frame] = []
    context: dict[str, Any] = {}
    payload: list[Segment] = []
    succeeded: list[str] = []
    failed_prereqs: dict[str, str] = {}
    pending: PendingStep | None = None
    step_seq: int = 0
    steps_taken: int = 0
    trace: list[TraceEntry] = []
    notes: list[str] = []
    error: str | None = None
    started_ms: int | None = None
    ended_ms: int | None = None
    suspension: Suspension | None = None


def new_run(workflow: CompiledWorkflow, run_id: str) -> RunState:
    """Return the state of a run of ``workflow`` that has not been submitted yet.

    Feed it :class:`RunSubmitted` to start it. ``workflow`` is taken so that a future version
    can size the state from it; today it is not read.
    """
    del workflow
    return RunState(run_id=run_id)
