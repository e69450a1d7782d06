"""A run's trace as clients read it: one typed map per ended step."""

from __future__ import annotations

from typing import TypedDict

__all__ = ["TraceRecord"]


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
