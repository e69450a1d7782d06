"""How a step ends: the fact handling every engine shares, written once.

Workflows and plans schedule differently, but a step in flight ends the same way in both: an
outcome (its event shortened, its outputs filtered against the declared ones), a deadline
passed (``timeout``, and the worker is told to stop), no worker in time (``unavailable``), a
lost worker (a new attempt when the capability is idempotent, up to :data:`MAX_LOST_ATTEMPTS`,
else ``failure``), or the run cancelled (``cancelled``). Each of those becomes one
:class:`StepEnd` record, from which an engine writes its trace entry (:func:`trace_entry`, the
:class:`TraceEntry` every engine keeps) and routes the step; the error texts and reasons are the
same whichever engine ran the step. An event the capability does not declare ends the step
``failure`` (:data:`UNDECLARED_EVENT`).

The outputs rule (one rule for every engine): only the keys a capability declares in its
``outputs`` travel on, into the run's context or a plan step's result; a capability that
declares no outputs contributes none. Every other key is listed in the step's
``dropped_outputs``.

Before either engine's own ``match``, the same status gate (:func:`admit`): a value that is
not a fact is a ``TypeError``; a fact for a run that has ended, or a fact about a step while
the run is suspended on a question (only an answer, an expiry or a cancel moves it), changes
nothing but a note (:func:`describe`, never the fact's values), so a journal of facts means the
same whatever kind of document the run follows.

Pure like the engines: no clock, no I/O, no randomness, no logging.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Protocol

import msgspec

from ontoflow.protocols.events import CANCELLED, FAILURE, TIMEOUT, UNAVAILABLE, UNDECLARED_EVENT
from ontoflow.protocols.types import RunStatusName

from ontoflow.actors.orchestrator.engine._commands import CancelStep, Command, Dispatch
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

__all__ = [
    "FACTS",
    "MAX_LOST_ATTEMPTS",
    "UNDECLARED_EVENT",
    "StepEnd",
    "TraceEntry",
    "admit",
    "at_once_end",
    "cancelled_end",
    "describe",
    "engine_end",
    "note_stale",
    "outcome_end",
    "redispatch",
    "split_outputs",
    "trace_entry",
]

_replace = msgspec.structs.replace

#: The attempt on which a lost step is lost for good, idempotent or not: it then ends
#: ``failure``. Without it a step that kills every worker it lands on (a poison pill) went to
#: worker after worker forever, each time with a fresh deadline. Ray retries a task whose worker
#: dies 3 times by default; 3 attempts here also stay within the embedded cluster's restart
#: intensity (3 restarts in 10 s), so its run is routed rather than stopped by the supervisor.
#: The attempt is the step's (a re-dispatch after a person's answer counts too).
MAX_LOST_ATTEMPTS = 3


# ``gc=False``: pure data that never refers back to what holds it, so no reference cycle can pass
# through it and the collector need not track it (less to allocate, free and traverse per step);
# so are the classes below.
class StepEnd(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """How one step attempt ended: what an engine records in the trace and routes on.

    Attributes:
        step_id: the step.
        capability: the capability it ran.
        event: the short event (``success``, ``timeout``...).
        attempt: the last attempt; 0 when the engine ended the step without dispatching it.
        duration_ms: the worker's measure when an outcome arrived, else the time since dispatch.
        retries: the capability base's retries (from the outcome).
        reason: why a failure happened (``error``, ``worker_lost``, ``deadline``...).
        error: the human-readable error, if any.
        started_ms: first dispatch (or decision) time.
        ended_ms: when the step ended.
        outputs: the declared outputs the step produced (see the module's outputs rule).
        dropped: the output keys not declared, not kept.
    """

    step_id: str
    capability: str
    event: str
    attempt: int
    duration_ms: float = 0.0
    retries: int = 0
    reason: str | None = None
    error: str | None = None
    started_ms: int
    ended_ms: int
    outputs: dict[str, Any] = {}
    dropped: list[str] = []


class TraceEntry(msgspec.Struct, frozen=True, gc=False):
    """The record of one finished step (not keyword-only: the engine makes one per step
    positionally, as msgspec matches keywords one by one).

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

def split_outputs(outputs: Mapping[str, Any], declared: Collection[str]) -> tuple[dict[str, Any], list[str]]:
    """The outputs rule: ``(kept, dropped)``, the declared keys kept and the others dropped."""
    if not outputs:
        return {}, []
    kept: dict[str, Any] = {}
    dropped: list[str] = []
    for key, value in outputs.items():
        if key in declared:
            kept[key] = value
        else:
            dropped.append(key)
    return kept, dropped


def outcome_end(fact: StepFinished, *, capability: str, prefix: str, declared: Collection[str],
                started_ms: int, events: Collection[str] = ()) -> StepEnd:
    """The end of a step whose worker answered (``fact.outcome``).

    With ``events`` (the capability's declared events and the reserved ones), an event outside
    them ends the step ``failure`` (reason ``undeclared_event``, its outputs dropped), as the
    capability base ends a Python capability's: a worker speaking the wire protocol itself
    could answer any text, which counted as a success (a prerequisite met, a run without
    transitions ``completed``) and was quoted whole in the run's error.
    """
    outcome = fact.outcome
    event = outcome.event
    if event.startswith(prefix):  # a full event name: keep the short one
        event = event[len(prefix) :]
    if events and event not in events:
        return StepEnd(step_id=outcome.step_id, capability=capability, event=FAILURE, attempt=outcome.attempt,
                       duration_ms=outcome.duration_ms, retries=outcome.retries, reason=UNDECLARED_EVENT,
                       error=f"the worker answered an event '{capability}' does not declare ({len(event)} characters)",
                       started_ms=started_ms, ended_ms=fact.now_ms, dropped=list(outcome.outputs))
    kept, dropped = split_outputs(outcome.outputs, declared) if outcome.outputs else ({}, [])
    return StepEnd(step_id=outcome.step_id, capability=capability, event=event, attempt=outcome.attempt,
                   duration_ms=outcome.duration_ms, retries=outcome.retries, reason=outcome.reason,
                   error=outcome.error, started_ms=started_ms, ended_ms=fact.now_ms, outputs=kept, dropped=dropped)


def engine_end(fact: StepDeadlineExpired | StepUnavailable | StepLost, *, run_id: str, capability: str,
               idempotent: bool, started_ms: int, cmds: list[Command]) -> StepEnd | None:
    """The end the engine decides for a step that got no outcome; ``None`` when a lost step is
    to be dispatched again (``redispatch``: idempotent, and lost before attempt
    :data:`MAX_LOST_ATTEMPTS`). A timed-out step's worker is sent a CancelStep."""
    match fact:
        case StepDeadlineExpired(step_id=step_id):
            cmds.append(CancelStep(run_id, step_id, fact.attempt))
            event, reason = TIMEOUT, "deadline"
            error = f"step {step_id} of '{capability}' passed its deadline without an outcome"
        case StepUnavailable():
            event, reason, error = UNAVAILABLE, "no_worker", f"no live worker offered '{capability}' in time"
        case StepLost(step_id=step_id, reason=lost_reason, attempt=attempt):
            if idempotent and attempt < MAX_LOST_ATTEMPTS:
                return None
            event, reason = FAILURE, lost_reason
            error = (f"step {step_id} of '{capability}' was lost ({lost_reason}) and the capability is not idempotent"
                     if not idempotent else f"step {step_id} of '{capability}' was lost ({lost_reason}) on attempt "
                     f"{attempt}, its last (a lost step is dispatched at most {MAX_LOST_ATTEMPTS} times)")
    return StepEnd(step_id=fact.step_id, capability=capability, event=event, attempt=fact.attempt,
                   duration_ms=float(fact.now_ms - started_ms), reason=reason, error=error, started_ms=started_ms,
                   ended_ms=fact.now_ms)


def redispatch(dispatch: Dispatch, fact: StepLost, *, capability: str, budget_ms: int | None) -> tuple[Dispatch, str]:
    """The next attempt of a lost idempotent step, and the note that says so."""
    attempt = dispatch.attempt + 1
    again = _replace(dispatch, attempt=attempt, deadline_at_ms=None if budget_ms is None else fact.now_ms + budget_ms)
    note = (f"step {fact.step_id} of '{capability}' lost ({fact.reason}) on attempt {fact.attempt}; "
            f"dispatched again as attempt {attempt}")
    return again, note


def at_once_end(*, step_id: str, capability: str, event: str, reason: str | None, error: str | None,
                started_ms: int, ended_ms: int) -> StepEnd:
    """The end of a step the engine decided without a worker (attempt 0): a missing input, a
    bad reference, a failed prerequisite or dependency, or a fan-out's gathering."""
    return StepEnd(step_id=step_id, capability=capability, event=event, attempt=0,
                   duration_ms=float(ended_ms - started_ms), reason=reason, error=error, started_ms=started_ms,
                   ended_ms=ended_ms)


def cancelled_end(fact: RunCancelled, *, step_id: str, capability: str, attempt: int, started_ms: int) -> StepEnd:
    """The end of a step in flight when its run is cancelled."""
    return StepEnd(step_id=step_id, capability=capability, event=CANCELLED, attempt=attempt,
                   duration_ms=float(fact.now_ms - started_ms), reason="run_cancelled", error=fact.reason,
                   started_ms=started_ms, ended_ms=fact.now_ms)


def describe(fact: Fact) -> str:
    """A short name for a fact in a note (never its values)."""
    match fact:
        case StepFinished(outcome=outcome):
            return f"outcome {outcome.step_id}/{outcome.attempt}"
        case StepDeadlineExpired() | StepUnavailable() | StepLost():
            return f"{type(fact).__name__} {fact.step_id}/{fact.attempt}"
    return type(fact).__name__


# -- which facts a run takes at all: the status gate before each engine's own match --------------

#: Every fact type (``isinstance`` against the :data:`Fact` union, as a tuple).
FACTS = (StepFinished, RunSubmitted, StepDeadlineExpired, StepUnavailable, StepLost, RunCancelled, RunResumed,
         RunExpired)

#: The facts a suspended run takes.
_WHILE_SUSPENDED = (RunResumed, RunExpired, RunCancelled)


class _Gated(Protocol):
    """What the gate reads and writes of a run's state (``RunState`` and ``PlanState``)."""

    notes: list[str]

    @property
    def status(self) -> RunStatusName:
        """The run's status (read only, here)."""


def admit(state: _Gated, fact: Fact) -> bool:
    """Whether the engine is to handle ``fact`` now; when not, a note says why.

    Args:
        state: the run's state (its ``status`` is read, its ``notes`` appended to).
        fact: what happened.

    Returns:
        True when the run is running, or suspended and ``fact`` answers, expires or cancels it.

    Raises:
        TypeError: when ``fact`` is not one of the :data:`Fact` types.
    """
    if not isinstance(fact, FACTS):
        raise TypeError(f"advance() takes a Fact, got {type(fact).__name__}")
    status = state.status
    if status == "running":
        return True
    if status == "suspended":
        if isinstance(fact, _WHILE_SUSPENDED):
            return True
        state.notes.append(f"{describe(fact)} ignored: run suspended")
        return False
    state.notes.append(f"{describe(fact)} ignored: run already {status}")
    return False


def note_stale(state: _Gated, fact: Fact) -> None:
    """Note a fact about a step or attempt that is not in flight (a late or duplicate one)."""
    state.notes.append(f"stale {describe(fact)} ignored")
