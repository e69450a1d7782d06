"""How a worker's step runner gets past what a step did: a cancellation the step asked of
its own runner taken back, an ``invoke`` that raised answered as a failure, the host's own
stop told from a step's (``_scheduler.StepScheduler``'s runners)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import Any

import anyio
import structlog

from ontoflow.protocols.events import FAILURE
from ontoflow.protocols.messages import Invoke, Outcome

__all__ = ["each", "escaped", "host_stops", "take_back"]

log = structlog.get_logger()


def host_stops() -> bool:
    """Whether a cancel scope around the running runner was cancelled: the host is stopping
    (anyio tells it as a deadline already past)."""
    return anyio.current_effective_deadline() == -math.inf


async def take_back(task: asyncio.Task[Any]) -> None:
    """Undo cancellations a step asked of its own runner (``asyncio.current_task().cancel()``):
    before, the CancelledError left the runner (the step was never answered, its slot never
    freed), or, when the step returned first, ended the runner at its next wait; with every
    runner gone so, the worker read nothing more. The pending one is consumed here, once."""
    while task.cancelling():
        task.uncancel()
    try:
        await asyncio.sleep(0)  # a cancellation still due is delivered at this wait, and dropped
    except asyncio.CancelledError:
        if host_stops():
            raise
        while task.cancelling():
            task.uncancel()


def each(answer: Callable[[Outcome], None]) -> Callable[[list[Outcome]], None]:
    """``answer`` called for each of a list of Outcomes (a scheduler given no ``answer_many``)."""

    def answer_each(outcomes: list[Outcome]) -> None:
        for outcome in outcomes:
            answer(outcome)

    return answer_each


def escaped(invoke: Invoke, exc_type: str) -> Outcome:
    """The failure of a step whose ``invoke`` raised instead of answering (only the type is
    told: the text may quote what the step was handed)."""
    log.error("capability_invoke_raised", capability=invoke.capability, run_id=invoke.run_id,
              step_id=invoke.step_id, exc_type=exc_type)
    return Outcome(run_id=invoke.run_id, step_id=invoke.step_id, attempt=invoke.attempt, event=FAILURE,
                   reason="internal", error=f"unknown: {exc_type}: the capability's invoke raised")
