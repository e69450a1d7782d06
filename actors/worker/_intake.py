"""How a worker host takes a batch from its mailbox: the Invokes it can run queued together.

Most of a batch is Invokes, each of which the host's ``receive`` would queue one at a time (a
call, a ``match``, the session's state asked anew, a call of the scheduler): ``receive_batch``
queues a run of them with one call of ``StepScheduler.enqueue_many``, in order, and hands every
other message to ``receive`` as before (after queueing the Invokes ahead of it: a Cancel after
its Invoke still finds it). What cannot run here (no welcomed session, a drain, a capability
not hosted) goes through ``receive`` too, which refuses it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog

from ontoflow.protocols.messages import Invoke
from ontoflow.runtime.actor import BatchActor

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ontoflow.actors.capability import Capability
    from ontoflow.actors.worker._scheduler import StepScheduler
    from ontoflow.actors.worker._session import Session

__all__ = ["InvokeIntake"]

log = structlog.get_logger()


class InvokeIntake(BatchActor):
    """``receive_batch`` for ``WorkerHost`` (see the module docstring)."""

    _capabilities: Mapping[str, Capability]
    _current: Session | None
    _draining: bool
    steps: StepScheduler

    def receive_batch(self, batch: list[tuple[bytes, Any]], now: int) -> None:
        """``receive`` each message of ``batch`` in order, the Invokes of a welcomed session that
        can run here queued together (one call for a run of them, not one ``receive`` each)."""
        invokes: list[Invoke] = []
        hosted = self._capabilities
        session = self._current
        takes = not self._draining and session is not None and session.welcomed
        for identity, message in batch:
            if takes and type(message) is Invoke and message.capability in hosted:
                invokes.append(message)
                continue
            if invokes:
                self._queue(invokes, now)
                invokes = []
            super().receive_batch([(identity, message)], now)  # it may end the session, or welcome one
            session = self._current
            takes = not self._draining and session is not None and session.welcomed
        if invokes:
            self._queue(invokes, now)

    def _queue(self, invokes: list[Invoke], now: int) -> None:
        """Queue a run of Invokes with one call; should that raise (an Invoke the wire cannot
        deliver, e.g. one made in-process with a field of the wrong type), each goes through
        ``receive`` on its own instead, as before the batch was taken whole: the bad one is
        logged ``message_handling_failed`` and the rest of the batch still handled (one queued
        before it is then logged ``invoke_duplicate``, not queued twice). Their peer is ``b""``:
        a worker's mailbox is its session's DEALER, whose one peer is the daemon."""
        try:
            self.enqueue(invokes)
        except Exception:
            super().receive_batch([(b"", invoke) for invoke in invokes], now)

    def enqueue(self, invokes: list[Invoke]) -> None:
        """Queue ``invokes`` (runnable here) for the runner reading; a duplicate is logged."""
        for again in self.steps.enqueue_many(invokes):
            log.warning("invoke_duplicate", run_id=again.run_id, step_id=again.step_id, attempt=again.attempt)
