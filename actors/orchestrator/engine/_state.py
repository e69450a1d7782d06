"""The state of one run: everything :func:`advance` reads and writes.

The caller owns a :class:`RunState` and :func:`advance` mutates it in place (no copy per step:
the engine must decide a step in microseconds). A snapshot is ``msgspec.msgpack.encode(state)``
and ``msgspec.msgpack.decode(data, type=RunState)`` restores it.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ontoflow.protocols.context import Segment
from ontoflow.protocols.types import RunStatusName

from ontoflow.actors.orchestrator.engine._commands import Dispatch
from ontoflow.actors.orchestrator.engine._step_end import TraceEntry
from ontoflow.actors.orchestrator.engine._suspend import Suspension

__all__ = ["Frame", "PendingStep", "RunState"]  # and, for ``_steps``, the step ids below


def step_id_of(seq: int) -> str:
    """The id of a run's ``seq``-th step: ``s1``, ``s2``..."""
    return STEP_IDS[seq] if seq < KEPT_STEP_IDS else f"s{seq}"


KEPT_STEP_IDS = 256
#: The ids of a run's first steps, made once: every run's steps are named from ``s1`` again,
#: and an f-string per step cost about 1.2k instructions (``STEP_IDS[seq]``: a tenth of that).
STEP_IDS: tuple[str, ...] = tuple(f"s{seq}" for seq in range(KEPT_STEP_IDS))


# ``gc=False``: pure data that never refers back to what holds it, so no reference cycle can pass
# through it and the collector need not track it (less to allocate, free and traverse per step);
# so are the classes below.
class Frame(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """A return address pushed by ``CALL``.

    ``block`` is ``None`` when the calling block was the last of its node: returning there
    returns again (an implicit ``RETURN``).
    """

    node: str
    block: str | None


class PendingStep(msgspec.Struct, gc=False):
    """The step in flight: at most one per run (made positionally, per step, by ``_steps``).

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


class RunState(msgspec.Struct, kw_only=True, gc=False):
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

