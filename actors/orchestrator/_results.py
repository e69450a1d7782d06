"""What a finished run looks like to the caller that submitted it."""

from __future__ import annotations

from typing import Any

import msgspec

from ontoflow.protocols.types import RunStatusName

__all__ = ["RunResult"]


# ``gc=False``: pure data that never refers back to what holds it, so no reference cycle can pass
# through it and the collector need not track it (less to allocate, free and traverse per step).
class RunResult(msgspec.Struct, gc=False):
    """The end of a run: its status, final context and trace (one entry per step). Not
    keyword-only: the daemon makes one per run positionally (msgspec matches keywords one by one).

    ``trace`` holds the engine's TraceEntry records (block, capability, event, action taken,
    duration_ms, retries...). ``questions`` is filled only by ``ontoflow.run_manifest``, for a
    run it returns ``suspended``: the questions nobody answered.
    """

    run_id: str
    status: RunStatusName
    error: str | None
    context: dict[str, Any]
    trace: list[Any]
    started_ms: int
    ended_ms: int
    questions: list[Any] = []
