"""The edge's turns waiting on their runs: until a run ends or asks a question, and what a
withdrawn turn does to its run.

A turn that started (or resumed) a run waits here for it to end, or to suspend on a question
(answered at once). The orchestrator's run-end observer is in only while some turn waits: the
runs the edge did not start are none of its business. A turn cancelled while it waits (its
caller went away: the HTTP entry cancels the turn when its client closes the connection)
cancels the run as ``ontoflow cancel`` does, so nothing runs on for an answer nobody will read.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import structlog

from ontoflow.actors.orchestrator._orchestrator import Orchestrator, UnknownRunError
from ontoflow.runtime.journal import JournalError

__all__ = ["RunWaits"]

log = structlog.get_logger()


class RunWaits:
    """Wakes the turns waiting on ``orchestrator``'s runs (see the module docstring)."""

    def __init__(self, orchestrator: Orchestrator) -> None:
        self._orch = orchestrator
        self._events: dict[str, anyio.Event] = {}  # run -> the event its waiting turns wake on
        self._waiting: dict[str, int] = {}  # run -> how many turns wait on it
        self._holding: dict[str, int] = {}  # run -> how many turns would cancel it if withdrawn
        self._waiters = 0  # turns waiting on any run: the run-end observer is in while any is

    def waiting(self, run_id: str) -> int:
        """How many turns wait on ``run_id`` now."""
        return self._waiting.get(run_id, 0)

    def run_suspended(self, run: Any) -> None:
        """A run now asks a question (``RunTable.on_suspended``): its turn answers it at once."""
        event = self._events.get(run.run_id)
        if event is not None:
            event.set()

    def run_ended(self, result: Any) -> None:
        """A run ended (``Orchestrator.on_run_ended``): the turn waiting on it answers."""
        event = self._events.get(result.run_id)
        if event is not None:
            event.set()

    async def settled(self, run_id: str) -> Any:
        """The run's result once it ends, or None once it asks a question.

        Cancelled meanwhile, it cancels the run (``withdrawing``) and raises the cancellation.
        """
        done = self._orch.status(run_id)
        # It may have suspended while its submit awaited the commit: no event would come then.
        if done is not None or self._asks_now(run_id):
            return done
        if not self._waiters:
            self._orch.on_run_ended.append(self.run_ended)
        self._waiters += 1  # counted, not read off _events: two turns may wait on one run
        event = self._events.setdefault(run_id, anyio.Event())
        self._waiting[run_id] = self._waiting.get(run_id, 0) + 1
        try:
            with self.withdrawing(run_id):
                await event.wait()
        finally:
            # The event goes with the last turn waiting on it: another one's withdrawal must
            # not take it from a turn still waiting (no run end could wake that one then).
            self._waiting[run_id] -= 1
            if not self._waiting[run_id]:
                del self._waiting[run_id]
                self._events.pop(run_id, None)
            self._waiters -= 1
            if not self._waiters:
                self._orch.on_run_ended.remove(self.run_ended)
        return self._orch.status(run_id)

    @contextmanager
    def withdrawing(self, run_id: str) -> Iterator[None]:
        """Within it, a cancellation (the turn's caller went away) cancels the run first, through
        the path ``ontoflow cancel`` takes (``Orchestrator.cancel``), unless another turn is
        still within it for the same run (its caller still wants the answer)."""
        self._holding[run_id] = self._holding.get(run_id, 0) + 1
        try:
            yield
        except anyio.get_cancelled_exc_class():
            if self._holding[run_id] == 1:
                try:
                    self._orch.cancel(run_id, "the turn waiting on it was withdrawn (its client went away)")
                except (UnknownRunError, JournalError) as exc:  # forgotten; or the journal is down: it runs on
                    log.warning("ask_run_not_cancelled", run_id=run_id, error=type(exc).__name__)
            raise
        finally:
            self._holding[run_id] -= 1
            if not self._holding[run_id]:
                del self._holding[run_id]

    def _asks_now(self, run_id: str) -> bool:
        try:
            return bool(self._orch.questions(run_id))
        except UnknownRunError:  # forgotten: it ended, and its status says how
            return False
