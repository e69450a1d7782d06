"""How a worker's step runner runs one queued step (``StepScheduler``'s, a base of it).

``run_next`` is a plain function, not a coroutine: most steps end in their first slice (see
``_inline``), and for them the runner creates no coroutine of its own and awaits nothing (a
coroutine per step cost about 700 instructions of a step's 45,000). Only a step that waits,
or one that cancelled its own runner, is finished by a coroutine ``run_next`` returns for the
runner to await (``_waiting``, ``_taken_back``), with the same handling at every stage as a
step that ends at once: what it raised (``_raised``), its slot given back and the scheduler's
cancellation taken back (``_settle``), its answer (``_answer_step``).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Coroutine, Mapping
from contextlib import AbstractContextManager
from typing import Any

import structlog

from ontoflow.actors.capability import Capability
from ontoflow.actors.worker._inline import not_closed, resume
from ontoflow.actors.worker._step_exits import escaped, host_stops, take_back
from ontoflow.protocols.events import CANCELLED
from ontoflow.protocols.messages import Invoke, Outcome
from ontoflow.runtime.batching import SEND_CHUNK
from ontoflow.runtime.errors import Interrupted

__all__ = ["StepRunning"]

log = structlog.get_logger()

StepKey = tuple[str, str, int]
Task = asyncio.Task[Any]
#: What ``run_next`` returns: whether the runner ends (it ran a step answered without it),
#: or a coroutine telling it once awaited.
Next = bool | Coroutine[Any, Any, bool]


class StepRunning:
    """The running of one queued step (``StepScheduler`` sets every attribute named here)."""

    _capabilities: Mapping[str, Capability]
    slots: int
    verbose: bool | None
    _answer: Callable[[Outcome], None]
    _answer_many: Callable[[list[Outcome]], None]
    _answered: list[Outcome]
    _flush: Callable[[], None]
    _hold: Callable[[], AbstractContextManager[Any]]
    _running: dict[StepKey, Task | None]
    _cancel_requested: set[StepKey]
    _cancel_due: dict[StepKey, int]
    _abandoned: set[StepKey]
    _queue: deque[Invoke]
    _busy: int
    _closed: bool
    _quiet: Any

    def _has_work_for_another(self) -> bool:
        raise NotImplementedError

    def _wake_runner(self) -> None:
        raise NotImplementedError

    def run_next(self, invoke: Invoke, task: Task) -> Next:
        """Run one queued step in ``task`` (the calling runner), unless it was cancelled while
        queued, and answer it; True when it had been answered without it (``abandon_overdue``):
        the runner then ends, replaced. A coroutine instead when the step waits (see the module)."""
        key = (invoke.run_id, invoke.step_id, invoke.attempt)
        running = self._running
        if key not in running:
            return False
        outcome: Outcome | None = None
        cancels = self._cancel_requested  # usually empty: asked before each lookup (a tuple hashes anew)
        if not cancels or key not in cancels:  # else cancelled while queued: never started
            running[key] = task
            self._busy += 1
            waits = False
            try:
                # In the try: an ``invoke`` overridden as a plain function may raise when called.
                coro = self._capabilities[invoke.capability].invoke(invoke, verbose=self.verbose)
                # The step's first slice runs right here (``_inline``): most steps end in it.
                try:
                    pending = coro.send(None)
                except StopIteration as stop:
                    outcome = stop.value
                except GeneratorExit as exc:  # raised, not thrown in: nobody closes a running coroutine
                    raise not_closed(exc) from exc
                else:
                    waits = True
            except BaseException as exc:  # noqa: BLE001 - sorted by _raised
                outcome = self._raised(exc, invoke, key, task)
            finally:
                if not waits:  # ``_settle``, written out (a call costs a step 400 instructions); a waiting step's is later
                    abandoned = bool(self._abandoned) and key in self._abandoned
                    if not abandoned:
                        self._busy -= 1
                    if cancels and key in cancels:
                        task.uncancel()
            if waits:
                return self._waiting(invoke, key, task, coro, pending)
            if abandoned:
                return self._ended_abandoned(key)
        # ``_tail`` and ``_answer_step`` for a step that did not wait, written out too.
        if cancels:
            cancels.discard(key)
        if self._cancel_due:
            self._cancel_due.pop(key, None)
        running.pop(key, None)  # before any wait: a Cancel for this step must not reach the runner now
        if task.cancelling() and not host_stops():
            return self._taken_back(invoke, task, outcome, False)
        if outcome is None:  # a Cancel arrived for this step
            return self._answer_step(invoke, outcome, False)
        answered = self._answered
        if self._queue and self._busy < self.slots and not self._closed:
            answered.append(outcome)  # the runner goes on with the next queued step
            if len(answered) >= SEND_CHUNK:
                self._hand_over()
        elif answered:
            # The last of the steps run back to back: their answers leave together, now.
            answered.append(outcome)
            self._hand_over()
        else:  # a step run alone (one at a time): no list to make
            with self._hold():
                self._answer(outcome)
            self._flush()
        if self._quiet is not None and not self._busy:
            self._quiet.set()  # the last running step of a drain is answered
        return False

    async def _waiting(self, invoke: Invoke, key: StepKey, task: Task, coro: Any, pending: Any) -> bool:
        """The rest of a step that waits (its first slice yielded ``pending``)."""
        outcome: Outcome | None = None
        try:
            if self._answered:
                self._hand_over()  # the steps answered before this one must not wait for it
            # The step waits: another runner takes the mailbox or the next step meanwhile.
            if self._has_work_for_another():
                self._wake_runner()
            outcome = await resume(coro, pending)
        except BaseException as exc:  # noqa: BLE001 - sorted by _raised
            outcome = self._raised(exc, invoke, key, task)
        finally:
            abandoned = self._settle(key, task)
        if abandoned:
            return self._ended_abandoned(key)
        tail = self._tail(invoke, key, task, outcome, True)
        return tail if type(tail) is bool else await tail

    def _raised(self, exc: BaseException, invoke: Invoke, key: StepKey, task: Task) -> Outcome | None:
        """The answer of a step that raised ``exc`` (None: cancelled by its Cancel).

        Raises:
            BaseException: ``exc`` when it must leave the runner: the host itself is being
                cancelled, or it is a ``GeneratorExit`` or ``Interrupted``.
        """
        if isinstance(exc, asyncio.CancelledError):
            if key not in self._cancel_requested and task.cancelling() and host_stops():
                raise exc  # the host itself is being cancelled
            if key not in self._cancel_requested:  # raised by the step, or its own task.cancel()
                return escaped(invoke, "CancelledError")
            return None
        if isinstance(exc, (GeneratorExit, Interrupted)):
            # This runner is being closed (``resume`` told it from a step raising one), or a
            # person's second Ctrl-C came while the step blocked the loop: they get out.
            raise exc
        # An ``invoke`` overridden despite ``@final``, an exit it let through: the step
        # fails, the host and every other step in it go on.
        raised = exc.__cause__ if isinstance(exc.__cause__, GeneratorExit) else exc  # see not_closed
        return escaped(invoke, type(raised).__name__)

    def _settle(self, key: StepKey, task: Task) -> bool:
        """A step is over: its slot given back; True when it had been already (abandoned)."""
        abandoned = bool(self._abandoned) and key in self._abandoned  # its slot was given back already
        if not abandoned:
            self._busy -= 1
        cancels = self._cancel_requested
        if cancels and key in cancels:
            # Take back exactly the cancellation this scheduler asked for (whether the
            # step saw it or finished first), so the runner is not left "cancelling".
            task.uncancel()
        return abandoned

    def _tail(self, invoke: Invoke, key: StepKey, task: Task, outcome: Outcome | None, waited: bool) -> Next:
        cancels = self._cancel_requested
        if cancels:
            cancels.discard(key)
        if self._cancel_due:
            self._cancel_due.pop(key, None)
        self._running.pop(key, None)  # before any wait: a Cancel for this step must not reach the runner now
        if task.cancelling() and not host_stops():
            return self._taken_back(invoke, task, outcome, waited)
        return self._answer_step(invoke, outcome, waited)

    async def _taken_back(self, invoke: Invoke, task: Task, outcome: Outcome | None, waited: bool) -> bool:
        if self._answered:
            self._hand_over()  # no answer waits unlisted across a wait (a new Ready lists none of them)
        await take_back(task)  # the step cancelled its own task: that must not end the runner
        return self._answer_step(invoke, outcome, waited)

    def _answer_step(self, invoke: Invoke, outcome: Outcome | None, waited: bool) -> bool:
        if outcome is None:  # a Cancel arrived for this step
            outcome = Outcome(run_id=invoke.run_id, step_id=invoke.step_id, attempt=invoke.attempt,
                              event=CANCELLED, reason="cancelled")
        if waited:
            self._answer(outcome)  # leaves with the outbox's flush at the end of the event-loop turn
        else:
            answered = self._answered
            if self._queue and self._busy < self.slots and not self._closed:
                answered.append(outcome)  # the runner goes on with the next queued step
                if len(answered) >= SEND_CHUNK:
                    self._hand_over()
            elif answered:
                # The last of the steps run back to back: their answers leave together, now.
                answered.append(outcome)
                self._hand_over()
            else:  # a step run alone (one at a time): no list to make
                with self._hold():
                    self._answer(outcome)
                self._flush()
        if self._quiet is not None and not self._busy:
            self._quiet.set()  # the last running step of a drain is answered
        return False

    def _hand_over(self) -> None:
        """Answer the steps answered back to back, in one call, and send them now."""
        answered, self._answered = self._answered, []
        with self._hold():
            self._answer_many(answered)
        self._flush()

    def _ended_abandoned(self, key: StepKey) -> bool:
        """A step answered without it (``abandon_overdue``) ended at last: its outcome is dropped."""
        self._abandoned.discard(key)
        self._cancel_requested.discard(key)
        log.warning("stuck_step_ended", run_id=key[0], step_id=key[1], attempt=key[2], stuck=len(self._abandoned))
        return True
