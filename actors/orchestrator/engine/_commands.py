"""Commands: what the engine asks its shell to do.

The engine never performs them; the shell sends the ``Invoke``/``Cancel`` messages, arms the
deadline timer, reads the artifacts, and publishes the end of the run.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ontoflow.protocols.context import StepContext
from ontoflow.protocols.types import RunStatusName

__all__ = ["CancelStep", "Command", "Dispatch", "RunEnded", "Suspended"]


# ``gc=False``: pure data that never refers back to what holds it, so no reference cycle can pass
# through it and the collector need not track it (less to allocate, free and traverse per step).
class _Command(msgspec.Struct, frozen=True, array_like=True, tag_field="command", gc=False):
    """Base of every command."""


class Dispatch(_Command, frozen=True, tag="dispatch"):
    """Run one attempt of one step on a worker offering ``capability``.

    Attributes:
        run_id: the run.
        step_id: ``s1``, ``s2``...; a re-dispatch keeps the id and bumps ``attempt``.
        attempt: 1 for the first attempt.
        capability: the capability id.
        inputs: the resolved inputs (ontology key -> value).
        context: the five layers; ``context.artifact`` is empty: the shell fills it from
            ``artifacts`` before sending.
        deadline_at_ms: when the shell must report :class:`StepDeadlineExpired` (same clock as
            the facts' ``now_ms``); ``None`` for no limit.
        idempotent: re-running after a lost worker is safe.
        artifacts: the block's artifact paths (relative to the manifest's folder).
    """

    run_id: str
    step_id: str
    attempt: int
    capability: str
    inputs: dict[str, Any]
    context: StepContext
    deadline_at_ms: int | None
    idempotent: bool
    artifacts: list[str]


class CancelStep(_Command, frozen=True, tag="cancel_step"):
    """Stop that attempt of that step (the worker may still answer; the engine ignores it)."""

    run_id: str
    step_id: str
    attempt: int


class RunEnded(_Command, frozen=True, tag="run_ended"):
    """The run ended; ``status`` is ``completed``, ``failed``, ``cancelled`` or ``expired``."""

    run_id: str
    status: RunStatusName
    error: str | None


class Suspended(_Command, frozen=True, tag="suspended"):
    """A step asks a person ``question`` (see ``_suspend``): the shell arms the question's
    expiry (``since_ms`` plus its answer timeout, then :class:`RunExpired`) and tells the run's
    waiting clients. Nothing is in flight for that step until :class:`RunResumed`."""

    run_id: str
    token: str
    step_id: str
    capability: str
    question: str
    candidates: list[Any]
    since_ms: int


Command = Dispatch | CancelStep | RunEnded | Suspended
