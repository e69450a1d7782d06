"""The worker pool's clocks on steps: the deadline of each attempt, and how long a queued step
may wait while no live worker offers its capability (schedule-to-start).

Waiting for a slot of a connected (busy) worker is not unavailability: such steps wait as long
as it takes (``max_runs`` bounds how many there are). The schedule-to-start clock starts at the
later of the enqueue and the loss of the last worker offering the capability: a step that
waited behind a busy worker gets the whole timeout once that worker is gone.

The pool owns one :class:`StepClocks`, tells it when a deadline starts and stops and when a
capability loses its last worker, and lets it end, at each tick, the steps whose clock ran out
(a ``StepUnavailable`` or a ``StepDeadlineExpired`` fact handed to ``deliver``).
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import structlog

from ontoflow.actors.orchestrator._registry import PendingQueue
from ontoflow.actors.orchestrator._run_table import Run, RunTable
from ontoflow.actors.orchestrator.engine import Dispatch, Fact, StepDeadlineExpired, StepUnavailable

__all__ = ["Queued", "StepClocks"]

log = structlog.get_logger()

StepKey = tuple[str, str, int]  # (run_id, step_id, attempt)


class Queued(msgspec.Struct):
    """A dispatch in the pool's pending queue, and when it was queued."""

    dispatch: Dispatch
    enqueued_ms: int


class StepClocks:
    """Step deadlines and the schedule-to-start timeout (see the module docstring).

    Args:
        runs: the run table (a fact goes only to a live run).
        deliver: applies a fact to a live run.
        schedule_to_start_ms: how long a step may wait for a worker before it is unavailable.
    """

    def __init__(self, *, runs: RunTable, deliver: Callable[[Run, Fact], None], schedule_to_start_ms: int) -> None:
        self._runs = runs
        self._deliver = deliver
        self.schedule_to_start_ms = schedule_to_start_ms
        self._deadlines: dict[StepKey, int] = {}
        # When the last live worker offering a capability went away (see ``expire_unavailable``).
        self._unoffered_since: dict[str, int] = {}

    @property
    def running(self) -> int:
        """Attempts with a deadline running."""
        return len(self._deadlines)

    def start(self, dispatch: Dispatch) -> None:
        """Start the deadline of ``dispatch``'s attempt, if it has one."""
        if dispatch.deadline_at_ms is not None:
            self._deadlines[(dispatch.run_id, dispatch.step_id, dispatch.attempt)] = dispatch.deadline_at_ms

    def stop(self, key: StepKey) -> None:
        """Stop an attempt's deadline (answered, cancelled, lost or unavailable)."""
        self._deadlines.pop(key, None)

    def unoffered(self, capability: str, now: int) -> None:
        """The last live worker offering ``capability`` went away at ``now``."""
        self._unoffered_since[capability] = now

    def expire_unavailable(self, pending: PendingQueue, offers: Callable[[str], bool], now: int) -> None:
        """End as unavailable the queued steps that waited longer than the schedule-to-start
        timeout while no live worker offered their capability.

        Each queue is in enqueue order, so this touches only the expired entries, never the
        rest of a long queue.

        Args:
            pending: the pool's queue of :class:`Queued` dispatches, per capability.
            offers: whether a live worker offers a capability.
            now: the tick's time.
        """
        cutoff = now - self.schedule_to_start_ms
        for cap in pending.capabilities():
            if offers(cap) or self._unoffered_since.get(cap, 0) >= cutoff:
                continue
            for queued in pending.expire(cap, cutoff):
                assert isinstance(queued, Queued)  # the pool queues only these (not wire input)
                d = queued.dispatch
                self._deadlines.pop((d.run_id, d.step_id, d.attempt), None)
                run = self._runs.live(d.run_id)
                if run is not None:
                    log.warning("step_unavailable", run_id=d.run_id, step_id=d.step_id, capability=d.capability)
                    self._deliver(run, StepUnavailable(step_id=d.step_id, attempt=d.attempt, now_ms=now))

    def expire_deadlines(self, now: int, forget: Callable[[StepKey], None]) -> None:
        """End the attempts past their deadline at ``now``.

        Args:
            now: the tick's time.
            forget: called with each expired attempt before its fact is delivered (the pool
                stops awaiting it from a worker).
        """
        if not self._deadlines:
            return
        for key, deadline in list(self._deadlines.items()):
            if deadline <= now and key in self._deadlines:
                del self._deadlines[key]
                forget(key)
                run = self._runs.live(key[0])
                if run is not None:
                    log.warning("step_deadline_expired", run_id=key[0], step_id=key[1], attempt=key[2])
                    self._deliver(run, StepDeadlineExpired(step_id=key[1], attempt=key[2], now_ms=now))
