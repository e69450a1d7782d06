"""Facts: what happened, as the engine's only input (with the time it happened).

The actor shell turns every message, timer and supervision signal into one of these, appends it
to the journal, and hands it to :func:`advance`. Replaying the journal's facts through the same
function rebuilds the run exactly, which is why every fact carries ``now_ms`` and the engine
reads no clock. The facts are tagged (``fact`` field) and encoded as arrays, so the journal can
decode a row straight into the :data:`Fact` union; new fields only ever go at the end.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ontoflow.protocols.messages import Outcome

__all__ = [
    "Fact",
    "RunCancelled",
    "RunExpired",
    "RunResumed",
    "RunSubmitted",
    "StepDeadlineExpired",
    "StepFinished",
    "StepLost",
    "StepUnavailable",
]


# ``gc=False``: pure data that never refers back to what holds it, so no reference cycle can pass
# through it and the collector need not track it (less to allocate, free and traverse per step).
class _Fact(msgspec.Struct, frozen=True, array_like=True, tag_field="fact", gc=False):
    """Base of every fact."""


class RunSubmitted(_Fact, frozen=True, tag="run_submitted"):
    """A run was accepted with these inputs (ontology key -> value)."""

    run_id: str
    inputs: dict[str, Any]
    now_ms: int


class StepFinished(_Fact, frozen=True, tag="step_finished"):
    """A worker's :class:`~protocols.messages.Outcome` arrived."""

    outcome: Outcome
    now_ms: int


class StepDeadlineExpired(_Fact, frozen=True, tag="step_deadline_expired"):
    """The step's schedule-to-close budget (``Dispatch.deadline_at_ms``) passed without an outcome."""

    step_id: str
    attempt: int
    now_ms: int


class StepUnavailable(_Fact, frozen=True, tag="step_unavailable"):
    """No live worker offered the step's capability in time."""

    step_id: str
    attempt: int
    now_ms: int


class StepLost(_Fact, frozen=True, tag="step_lost"):
    """The worker running the step died or was interrupted.

    ``reason`` is ``"worker_lost"`` or ``"interrupted"``.
    """

    step_id: str
    attempt: int
    reason: str
    now_ms: int


class RunCancelled(_Fact, frozen=True, tag="run_cancelled"):
    """Someone asked to stop the run."""

    reason: str
    now_ms: int


class RunResumed(_Fact, frozen=True, tag="run_resumed"):
    """A person answered the question of a suspended run (``token`` names it)."""

    token: str
    answer: Any
    now_ms: int


class RunExpired(_Fact, frozen=True, tag="run_expired"):
    """Nobody answered the question ``token`` names in time: the run ends ``expired``."""

    token: str
    now_ms: int


Fact = (
    RunSubmitted | StepFinished | StepDeadlineExpired | StepUnavailable | StepLost | RunCancelled | RunResumed
    | RunExpired
)
