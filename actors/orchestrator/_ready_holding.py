"""What a registering worker's ``Ready.holding`` is answered with: a Cancel for each attempt
it holds that the orchestrator no longer awaits from it.

A part of the worker pool (``_worker_pool.py``: ``WorkerPool.ready``), pure: no clock, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable

from ontoflow.actors.orchestrator._registry import InFlight, SentStep
from ontoflow.protocols.messages import Cancel

__all__ = ["stale_cancels"]


def stale_cancels(held: set[tuple], kept: Iterable[SentStep | InFlight], orphans: list[SentStep]) -> list[Cancel]:
    """The Cancels of the attempts a Ready holds (``held``) that are no longer awaited from it
    (re-dispatched, ended, lost in this re-registration, or from before a restart), and of the
    ``orphans`` its replaced registration had in flight: their answers would be ignored."""
    stale = (held - {(k.run_id, k.step_id, k.attempt) for k in kept}) | {(o.run_id, o.step_id, o.attempt) for o in orphans}
    return [Cancel(run_id=run_id, step_id=step_id, attempt=attempt) for run_id, step_id, attempt in stale]
