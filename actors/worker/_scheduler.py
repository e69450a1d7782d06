"""The worker host's step scheduler: concurrency slots, the steps queued and running, Cancel.

The work is done by ``slots + 1`` long-lived step runners (spawning a task costs more than a
whole no-op step) that take turns at two jobs:

* **receiving**: one runner at a time reads the mailbox (``attach``: the host's session); the
  host handles what arrives (the actor kernel's ``pump``) and queues the Invokes here;
* **running steps**: a runner takes the next queued step (at most ``slots`` at once) and runs
  it in its own task up to its first wait (see ``_inline``). A step that never waits (a
  no-op, a lookup, a pure transform) is answered at once, and the runner goes on with the
  next queued step or back to the mailbox, with no task switch at all (the answers of the
  steps it ran back to back go to the host in one call, ``answer_many``, before it waits,
  reads or parks, and every ``SEND_CHUNK``); a step that waits makes
  its runner wake one idle runner first (to receive, or to take the next step), so waiting
  steps run concurrently. The extra runner guarantees someone can always read the mailbox,
  so a Cancel or a heartbeat is seen even with every slot busy.

``cancel`` stops exactly its step: a queued one never starts, a running one gets its runner
task cancelled (``Task.cancel``, taken back with ``uncancel`` once the step is over; an anyio
cancel scope per step would cost a third of a no-op step) and is answered ``cancelled``.

A step that ignores its Cancel is answered ``cancel_ignored`` past its grace, its slot given
back with a new runner (``abandon_overdue`` on the host's Ticks; ``_cancel_grace``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from typing import Any

import anyio
import structlog

from ontoflow.actors.capability import Capability
from ontoflow.actors.capability._scrub import type_name
from ontoflow.actors.worker._inline import not_closed, resume
from ontoflow.actors.worker._answer_groups import AnswerGroups
from ontoflow.actors.worker._cancel_grace import CancelGrace
from ontoflow.actors.worker._seen_attempts import MAX_SEEN_WINDOW_MS, SeenAttempts
from ontoflow.actors.worker._stall_allowance import StallAllowance
from ontoflow.actors.worker._step_exits import escaped, host_stops, take_back
from ontoflow.protocols.events import CANCELLED
from ontoflow.protocols.messages import Invoke, Outcome
from ontoflow.runtime.errors import Interrupted

__all__ = ["DEFAULT_CANCEL_GRACE_MS", "DEFAULT_CANCEL_GRACE_S", "MAX_SEEN_WINDOW_MS", "StepKey", "StepScheduler"]

log = structlog.get_logger()

#: An attempt: (run id, step id, attempt number).
StepKey = tuple[str, str, int]

#: How long a running step may take to stop after its Cancel before it is answered and its
#: slot given back (``ontoflow worker --cancel-grace-s``).
DEFAULT_CANCEL_GRACE_MS = 10_000
DEFAULT_CANCEL_GRACE_S = DEFAULT_CANCEL_GRACE_MS / 1000


class StepScheduler:
    """Runs a worker host's steps (see the module docstring).

    Args:
        capabilities: the hosted capabilities by id (an Invoke names one of them).
        slots: how many steps may run at once.
        answer: called with every step's Outcome, in the runner that ended the step.
        answer_many: called instead with the Outcomes of steps run back to back, once per
            group (one call where ``answer`` would be called per step); by default ``answer``
            is called for each.
        flush: called when a runner has answered the last of the steps it ran back to back,
            and every ``SEND_CHUNK`` of them (their answers may leave together now: the
            orchestrator starts on the first ones while the runner goes on).
        hold: entered around the ``answer`` that ``flush`` follows at once (the host's
            ``Outbox.holding``: that answer needs no flush of its own at the end of the
            event-loop turn, which would cost the loop one more trip per step).
        cancel_grace_ms: how long a running step may take to stop after its Cancel
            (``abandon_overdue``).
        seal: applied to an answer that waits for the steps run after it (``AnswerGroups``).
        stall: told of every step's start and end (``StallAllowance``: how long the heartbeat
            thread covers a blocked loop depends on the steps in flight).
    """

    def __init__(
        self,
        capabilities: Mapping[str, Capability],
        *,
        slots: int,
        answer: Callable[[Outcome], None],
        answer_many: Callable[[list[Outcome]], None] | None = None,
        flush: Callable[[], None] = lambda: None,
        hold: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext,
        cancel_grace_ms: int = DEFAULT_CANCEL_GRACE_MS,
        seal: Callable[[Outcome], Any] | None = None,
        stall: StallAllowance | None = None,
    ) -> None:
        if slots < 1:
            raise ValueError(f"slots must be >= 1, got {slots}")
        self._capabilities = capabilities
        self.slots = slots
        self._out = AnswerGroups(answer, answer_many, flush, hold, seal)  # how answers reach the host
        # Every attempt accepted and not answered: None while queued, its runner while running.
        self._running: dict[StepKey, asyncio.Task[Any] | None] = {}
        self._cancel_requested: set[StepKey] = set()
        # With its key: the very tuple ``_running`` holds (not built again; its lookups compare by identity).
        self._queue: deque[tuple[StepKey, Invoke]] = deque()
        self._busy = 0  # steps started and not answered: at most ``slots``
        self._idle: list[asyncio.Future[None]] = []  # parked runners, woken one at a time
        self._waking = 0  # runners woken and not yet running: at most one at a time
        self._reader: Callable[[], Awaitable[None]] | None = None
        self._receiving = False  # a runner is in the reader
        self._closed = False  # no step is started any more
        self._quiet: anyio.Event | None = None  # set when the last running step is answered
        #: Whether INFO log lines are on, passed to every step (None: each step asks the logger).
        self.verbose: bool | None = None
        self._grace = CancelGrace(cancel_grace_ms)  # running steps cancelled; those that ignored it
        self._group: anyio.abc.TaskGroup | None = None  # the runners' (a replacement joins it)
        #: Attempts accepted lately (``on_tick``): never run twice. The host sets its ``window_ms``.
        self.seen = SeenAttempts()
        self._stall = stall if stall is not None else StallAllowance({}, 0.0)

    # -- what the host calls ------------------------------------------------------------------

    @property
    def busy(self) -> int:
        """Steps started and not answered yet."""
        return self._busy

    def idle(self) -> bool:
        """Whether no step is running (none waits on I/O)."""
        return not self._busy

    @property
    def queued(self) -> int:
        """Steps accepted and not started yet."""
        return len(self._queue)

    def __len__(self) -> int:
        """Attempts accepted and not answered (queued or running)."""
        return len(self._running)

    def __iter__(self) -> Iterator[StepKey]:
        """The attempts accepted and not answered."""
        return iter(list(self._running))

    def attach(self, reader: Callable[[], Awaitable[None]] | None) -> None:
        """Have the runners read with ``reader`` (one at a time) when they have nothing to run;
        ``None``: nothing to read. ``reader`` returns after one batch, or at once once its
        mailbox is closed."""
        self._reader = reader
        if reader is not None:
            self._wake_runner()

    def enqueue(self, invoke: Invoke, *, wake: bool = True) -> bool:
        """Queue a step for a runner (``wake``: wake an idle runner for it); False when the
        attempt is already here (queued, running): nothing is queued. See ``enqueue_many``."""
        if self.enqueue_many([invoke]):
            return False
        if wake:
            self._wake_runner()
        return True

    def enqueue_many(self, invokes: list[Invoke]) -> list[Invoke]:
        """Queue steps in order (their capabilities among ``capabilities``), waking no runner:
        the reader's, whose runner runs them next. Returns those already here, not queued again."""
        running, queue, again, seen, before = self._running, self._queue, [], self.seen.now, self.seen.before
        for invoke in invokes:
            key = (invoke.run_id, invoke.step_id, invoke.attempt)
            if key in seen or key in running or key in before:  # running, or answered lately (``on_tick``)
                again.append(invoke)
                continue
            seen.add(key)
            # Registered now (None: queued), so a Cancel that arrives before a runner picks the step up still finds it.
            running[key] = None
            queue.append((key, invoke))
        return again

    def on_tick(self, now_ms: int) -> None:
        """The host's Tick: forget the attempts accepted two ``seen.window_ms`` ago (a copy of an
        Invoke answered before ran it twice: only one arriving while it ran was caught), and
        answer the steps past their Cancel's grace (``abandon_overdue``)."""
        self.seen.on_tick(now_ms)
        self.abandon_overdue(now_ms)

    def cancel(self, key: StepKey, now_ms: int | None = None) -> None:
        """Cancel a running or queued attempt (an unknown one is already over: nothing to do);
        a running one has until ``now_ms`` plus the grace to stop (``abandon_overdue``)."""
        if key not in self._running or key in self._cancel_requested:
            return
        self._cancel_requested.add(key)
        runner = self._running[key]
        if runner is not None:
            runner.cancel()  # the step is the only thing this runner awaits right now
            if now_ms is not None:
                self._grace.due[key] = now_ms + self._grace.grace_ms

    @property
    def cancel_grace_ms(self) -> int:
        """How long a running step may take to stop after its Cancel (``abandon_overdue``)."""
        return self._grace.grace_ms

    @property
    def stuck(self) -> int:
        """Steps answered after ignoring their Cancel past the grace, still running."""
        return len(self._grace.abandoned)

    def abandon_overdue(self, now_ms: int) -> None:
        """Answer every step still running past its Cancel's grace, give its slot back (a new
        runner takes the place of the one it holds) and log it (see the module docstring)."""
        if not self._grace.due:  # the usual Tick
            return
        for key in self._grace.overdue(now_ms):
            if self._running.get(key) is None or self._group is None:
                continue  # ended meanwhile
            del self._running[key]  # off the books: a Ready no longer lists it
            self._busy -= 1
            self._group.start_soon(self.runner)
            self._out.answer(self._grace.abandon(key))
            if self._quiet is not None and not self._busy:
                self._quiet.set()

    def close(self) -> None:
        """Start no step any more (a draining host): the queued ones stay unanswered."""
        self._closed = True

    async def settle(self, grace_s: float) -> int:
        """Wait up to ``grace_s`` for the running steps to be answered.

        Returns:
            How many were still running when the grace period ended.
        """
        if self._busy:
            self._quiet = anyio.Event()
            with anyio.move_on_after(grace_s):
                await self._quiet.wait()
        return self._busy

    async def run(self) -> None:
        """Run the ``slots + 1`` runners until cancelled."""
        async with anyio.create_task_group() as self._group:
            for _ in range(self.slots + 1):  # one more: someone can always read the mailbox
                self._group.start_soon(self.runner)

    # -- the runners ---------------------------------------------------------------------------

    def _wake_runner(self) -> None:
        if self._waking:
            return
        idle = self._idle
        while idle:
            wake = idle.pop()
            # A runner cancelled while parked leaves its future here, cancelled, until its task
            # runs again to take it back: setting it would raise InvalidStateError.
            if not wake.done():
                self._waking += 1
                wake.set_result(None)
                return

    def _has_work_for_another(self) -> bool:
        """Whether an idle runner would find something to do: a step it may start, or the
        mailbox with no one reading it."""
        if self._queue and self._busy < self.slots and not self._closed:
            return True
        return self._reader is not None and not self._receiving

    async def runner(self) -> None:
        """Run queued steps, else read the mailbox, else park; forever (``run`` starts
        ``slots + 1`` of them)."""
        queue = self._queue
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        try:
            await self._serve(queue, loop, task)
        finally:
            if self._out.answered:  # a step raised out of the runner (an exit): what was answered still goes
                self._out.hand_over()

    async def _serve(self, queue: deque[tuple[StepKey, Invoke]], loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> None:
        while True:
            if queue and self._busy < self.slots and not self._closed:
                if await self._run_next(queue.popleft(), task):
                    return  # it ran a step answered without it: another runner took its place
                continue
            if self._out.answered:
                self._out.hand_over()  # this runner stops taking steps: their answers leave now
            reader = self._reader
            if reader is not None and not self._receiving:
                self._receiving = True
                try:
                    await reader()
                finally:
                    self._receiving = False
                continue
            wake = loop.create_future()
            self._idle.append(wake)
            try:
                await wake
            finally:
                if wake.done() and not wake.cancelled():
                    self._waking -= 1
                elif wake in self._idle:  # cancelled while parked (the host stops): no longer idle
                    self._idle.remove(wake)

    async def _run_next(self, queued: tuple[StepKey, Invoke], task: asyncio.Task[Any]) -> bool:
        """Run one queued step in ``task`` (the calling runner), unless it was cancelled while
        queued, and answer it; True when it had been answered without it (``abandon_overdue``):
        the runner then ends, replaced."""
        key, invoke = queued
        running = self._running
        if key not in running:
            return False
        outcome: Outcome | None = None
        waited = False
        cancels = self._cancel_requested  # usually empty: asked before each lookup (a tuple hashes anew)
        if not cancels or key not in cancels:  # else cancelled while queued: never started
            running[key] = task
            self._busy += 1
            stall = self._stall
            stall.enter(invoke.capability)  # before its first slice: the one that blocks, most often
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
                    waited = True
                    if self._out.answered:
                        self._out.hand_over()  # the steps answered before this one must not wait for it
                    # The step waits: another runner takes the mailbox or the next step meanwhile.
                    if self._has_work_for_another():
                        self._wake_runner()
                    outcome = await resume(coro, pending)
            except asyncio.CancelledError:
                if key not in self._cancel_requested and task.cancelling() and host_stops():
                    raise  # the host itself is being cancelled
                if key not in self._cancel_requested:  # raised by the step, or its own task.cancel()
                    outcome = escaped(invoke, "CancelledError")
            except (GeneratorExit, Interrupted):
                # This runner is being closed (``resume`` told it from a step raising one), or a
                # person's second Ctrl-C came while the step blocked the loop: they get out.
                raise
            except BaseException as exc:  # noqa: BLE001 - the capability broke invoke's guarantee
                # An ``invoke`` overridden despite ``@final``, an exit it let through: the step
                # fails, the host and every other step in it go on.
                raised = exc.__cause__ if isinstance(exc.__cause__, GeneratorExit) else exc  # see not_closed
                outcome = escaped(invoke, type_name(raised))
            finally:
                stall.leave(invoke.capability)  # whether answered or abandoned: it runs no more
                abandoned = bool(self._grace.abandoned) and key in self._grace.abandoned  # its slot was given back already
                if not abandoned:
                    self._busy -= 1
                if cancels and key in cancels:
                    # Take back exactly the cancellation this scheduler asked for (whether the
                    # step saw it or finished first), so the runner is not left "cancelling".
                    task.uncancel()
            if abandoned:
                return self._ended_abandoned(key)
        if cancels:
            cancels.discard(key)
        if self._grace.due:
            self._grace.due.pop(key, None)
        running.pop(key, None)  # before any wait: a Cancel for this step must not reach the runner now
        if task.cancelling() and not host_stops():
            if self._out.answered:
                self._out.hand_over()  # no answer waits unlisted across a wait (a new Ready lists none of them)
            await take_back(task)  # the step cancelled its own task: that must not end the runner
        if outcome is None:  # a Cancel arrived for this step
            outcome = Outcome(run_id=invoke.run_id, step_id=invoke.step_id, attempt=invoke.attempt,
                              event=CANCELLED, reason="cancelled")
        if waited:
            self._out.answer(outcome)  # leaves with the outbox's flush at the end of the event-loop turn
        else:  # the runner goes on with the next queued step, if any: its answer waits for theirs (``_serve``)
            self._out.inline(outcome, not self._queue)
        if self._quiet is not None and not self._busy:
            self._quiet.set()  # the last running step of a drain is answered
        return False

    def _ended_abandoned(self, key: StepKey) -> bool:
        """A step answered without it (``abandon_overdue``) ended at last: its outcome is dropped."""
        self._grace.ended(key)
        self._cancel_requested.discard(key)
        return True
