"""The records a client reads inside a daemon's replies (``protocols.client``, which
re-exports them): a run's trace entries, a run in a listing, a live worker, a suspended run's
question."""

from __future__ import annotations

from typing import Any, TypedDict

import msgspec

from ontoflow.protocols.types import RunStatusName

__all__ = ["Question", "RunSummary", "TraceRecord", "WorkerRecord"]


class TraceRecord(TypedDict, total=False):
    """One ended step of a run, as clients read it (a map; the daemon sends its engine's
    ``TraceEntry`` records, which encode as exactly this). Typed on the wire: a client decodes
    each field strictly; a field a newer daemon adds is dropped, never an error."""

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
    dropped_outputs: list[str]


class RunSummary(msgspec.Struct, frozen=True, kw_only=True):
    """One run in a :class:`RunList`."""

    run_id: str
    status: RunStatusName
    name: str = ""
    submitted_ms: int = 0
    ended_ms: int | None = None


class WorkerRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One live worker as a client sees it."""

    worker_id: str
    host: str
    pid: int
    capabilities: list[str]
    slots: int
    in_flight: int
    last_seen_ms_ago: int
    #: The domains (seed 004) the worker announced in its ``Ready``, by id.
    domains: list[str] = []


class Question(msgspec.Struct, frozen=True, kw_only=True):
    """A question a suspended run asks a person (a step's ``clarification``).

    Attributes:
        token: what an :class:`Answer` names to answer this question (derived from the run,
            the step and the attempt: a later question of the same step has another token).
        step_id: the step that asked.
        capability: the capability that asked.
        question: the text for the person (the ``DomainOutput``'s explanation).
        candidates: the choices offered, as the capability gave them; empty: any answer.
        since_ms: when the run was suspended.
        expires_at_ms: when the run ends ``expired`` if nobody answers (``None``: never).
    """

    token: str
    step_id: str
    capability: str
    question: str
    candidates: list[Any] = []
    since_ms: int = 0
    expires_at_ms: int | None = None
