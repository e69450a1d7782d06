"""Which facts a run takes at all: the status gate every engine puts before its own ``match``.

Both engines answer the same way to a fact that arrives at the wrong time, so that a journal
of facts means the same whatever kind of document the run follows: a value that is not a
fact is a ``TypeError``; a fact for a run that has ended, or a fact about a step while the run
is suspended on a question (only an answer, an expiry or a cancel can move it), changes
nothing but a note (:func:`~engine._step_end.describe`, never the fact's values). Pure like
the engines.
"""

from __future__ import annotations

from typing import Protocol

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
from ontoflow.actors.orchestrator.engine._step_end import describe

__all__ = ["FACTS", "admit", "note_stale"]

#: Every fact type (``isinstance`` against the :data:`Fact` union, as a tuple).
FACTS = (StepFinished, RunSubmitted, StepDeadlineExpired, StepUnavailable, StepLost, RunCancelled, RunResumed,
         RunExpired)

#: The facts a suspended run takes.
_WHILE_SUSPENDED = (RunResumed, RunExpired, RunCancelled)


class _Gated(Protocol):
    """What the gate reads and writes of a run's state (``RunState`` and ``PlanState``)."""

    status: str
    notes: list[str]


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
