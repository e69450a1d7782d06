"""How a worker host takes a batch from its mailbox: the Invokes it can run queued together.

Most of a batch is Invokes, each of which the host's ``receive`` would queue one at a time (a
call, a ``match``, the session's state asked anew, a call of the scheduler): ``InvokeIntake.take``
queues a run of them with one call of ``StepScheduler.enqueue_many``, in order, and hands every
other message to the host's ``receive`` as before (after queueing the Invokes ahead of it: a
Cancel after its Invoke still finds it). What cannot run here (no welcomed session, a drain, a
capability not hosted) goes through ``receive`` too, which refuses it. The intake is a part the
host owns, told what it needs (the capabilities hosted, the scheduler, whether Invokes are taken
now, the one-message-at-a-time path), not a base class reading the host's attributes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import structlog

from ontoflow.protocols.events import UNAVAILABLE
from ontoflow.protocols.messages import Invoke, Outcome
from ontoflow.runtime.log_budget import LogBudget, at_doubling

if TYPE_CHECKING:
    from ontoflow.actors.capability import Capability
    from ontoflow.actors.worker._scheduler import StepScheduler

__all__ = ["DUPLICATES_LOG_MS", "InvokeIntake", "refusal"]

log = structlog.get_logger()

Batch = list[tuple[bytes, Any]]

#: The interval of the duplicates' log budget: a few ``invoke_duplicate`` lines each, then one
#: ``invokes_duplicate`` summary (a peer's flood of copies wrote a line per copy).
DUPLICATES_LOG_MS = 10_000


class InvokeIntake:
    """Takes a worker host's batches (see the module docstring).

    Args:
        hosted: the capabilities hosted, by id.
        steps: the host's step scheduler.
        takes: whether Invokes are taken now (a welcomed session, no drain); asked again after
            each message that is not such an Invoke, which may end the session or welcome one.
        each: the host's one-message-at-a-time path (``BatchActor.receive_batch``: ``receive``
            per message, an exception logged ``message_handling_failed``).
    """

    def __init__(self, hosted: Mapping[str, Capability], steps: StepScheduler, *, takes: Callable[[], bool],
                 each: Callable[[Batch, int], None]) -> None:
        self._hosted = hosted
        self._steps = steps
        self._takes = takes
        self._each = each
        self._duplicates = LogBudget("invokes_duplicate", interval=DUPLICATES_LOG_MS)
        #: Messages no worker takes (an Outcome, a Ready...), by type (``unexpected``).
        self.unexpected_counts: dict[str, int] = {}

    def unexpected(self, message: Any) -> None:
        """A message no worker takes, from a confused orchestrator: counted by type and logged at
        the 1st, 2nd, 4th, 8th... with the count (a flood of them wrote a line each)."""
        op = type(message).__name__
        if n := at_doubling(self.unexpected_counts, op):
            log.warning("message_unexpected", op=op, count=n)

    def take(self, batch: Batch, now: int) -> None:
        """Handle each message of ``batch`` in order, the Invokes that can run here queued
        together (one call for a run of them, not one ``receive`` each)."""
        invokes: list[Invoke] = []
        hosted = self._hosted
        takes = self._takes()
        if self._duplicates.unlogged:  # a flood's summary is due once its interval is over
            self._duplicates.tick(now)
        for identity, message in batch:
            if takes and type(message) is Invoke and message.capability in hosted:
                invokes.append(message)
                continue
            if invokes:
                self._queue(invokes, now)
                invokes = []
            self._each([(identity, message)], now)
            takes = self._takes()
        if invokes:
            self._queue(invokes, now)

    def enqueue(self, invokes: list[Invoke], now: int) -> None:
        """Queue ``invokes`` (runnable here) for the runner reading; a duplicate is logged
        (within the budget: ``DUPLICATES_LOG_MS``)."""
        for again in self._steps.enqueue_many(invokes):
            if self._duplicates.admit("invoke_duplicate", now):
                log.warning("invoke_duplicate", run_id=again.run_id, step_id=again.step_id, attempt=again.attempt)

    def _queue(self, invokes: list[Invoke], now: int) -> None:
        """Queue a run of Invokes with one call; should that raise (an Invoke the wire cannot
        deliver, e.g. one made in-process with a field of the wrong type), each goes through
        ``receive`` on its own instead, as before the batch was taken whole: the bad one is
        logged ``message_handling_failed`` and the rest of the batch still handled (one queued
        before it is then logged ``invoke_duplicate``, not queued twice). Their peer is ``b""``:
        a worker's mailbox is its session's DEALER, whose one peer is the daemon."""
        try:
            self.enqueue(invokes, now)
        except Exception:
            self._each([(b"", invoke) for invoke in invokes], now)


def refusal(invoke: Invoke, draining: bool, welcomed: bool, worker_id: str) -> Outcome | None:
    """The answer to an Invoke the host cannot run (its capability is not hosted), or None when
    it is left unanswered (logged): while draining, or before the session is welcomed
    (``welcomed``: a welcomed session is current)."""
    if draining:
        # Not started, not answered: the coming Disconnect hands it back as a lost worker's step.
        log.info("invoke_refused_draining", run_id=invoke.run_id, step_id=invoke.step_id, attempt=invoke.attempt)
        return None
    if not welcomed:
        # Sent before the orchestrator read this session's Ready (to a replaced connection, or
        # to this one while it was in flight): the Ready does not list it, so the orchestrator
        # sends it again once it has (``WorkerPool.ready``); running this copy too would run it twice.
        log.info("invoke_before_welcome", run_id=invoke.run_id, step_id=invoke.step_id, attempt=invoke.attempt)
        return None
    return Outcome(run_id=invoke.run_id, step_id=invoke.step_id, attempt=invoke.attempt, event=UNAVAILABLE,
                   reason="not_hosted", error=f"capability {invoke.capability!r} is not hosted by worker {worker_id}")
