"""What ends a worker process's serving (``WorkerHost`` with ``drain_on_signals``): a stop
signal (SIGTERM, SIGINT, SIGHUP unless ignored: ``runtime.loop.stop_signals``), or the
supervising parent that started it gone (``parent_pid``).

A worker started by ``ontoflow run`` (``runtime.actor.process_child``) serves that process's
orchestrator. When that process was killed outright (SIGKILL, the OOM killer), its children
were reparented and went on for ever: registering again and again at an address no one would
listen on again, a step they ran holding its slot. Now the worker asks for its parent every
``PARENT_CHECK_MS`` and, once it is another, stops as on SIGTERM (``worker_orphaned``).

A capability that changes a stop signal's handler (``signal.signal(SIGTERM, SIG_IGN)``, a
library installing its own) took the drain away: SIGTERM was ignored for good, or with
``SIG_DFL`` killed the worker outright (no drain, no answers, no ``shutdown()``). The worker
looks every ``PARENT_CHECK_MS`` too and puts its own handler back (``stop_signal_restored``).
That left a window: a SIGTERM within 500 ms of the change still killed it. While it listens,
``signal.signal`` for a stop signal now keeps the worker's handler (``stop_signal_kept``; the
caller gets it back as the previous one); the look remains for code that does not go through
``signal.signal`` (a C library's ``sigaction``).

A capability that closes fd 2 (``os.close(2)``) took the worker's stderr, where its log lines
go, away for good (and the next file a step opened became fd 2, its log lines written into
it); one closing fd 1 left it to the next file or socket opened (the worker's own connection
included), where every ``print`` then wrote. The worker keeps a copy of its fds 0, 1 and 2
and, on the same look, puts back each one found closed (``stdio_restored``); meanwhile log
lines are dropped (``runtime.logging``). An fd already reused is left to its new owner.

A thread a capability started and left running (not a daemon thread) held the worker process
up for ever once it was drained and shut down: the interpreter waits for every such thread at
exit. ``exit_despite_threads`` logs them (``worker_threads_left``) and ends the process with
exit code 0 if it is still there ``THREADS_EXIT_S`` later.

Once drained, a stopping worker cancels the steps still running and waits for them to end;
one that swallows every cancellation held the process for ever (it never exited, and a second
SIGTERM killed it without any ``shutdown()``). ``bound_exit`` gives them the cancel grace,
then ends the process with exit code 1, saying so on stderr (``worker_stop_stuck``).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager, suppress
from functools import partial
from typing import Any

import anyio
import structlog

from ontoflow.actors.capability._watchdog import BLOCKED_GRACE_S, EXIT_BLOCKED
from ontoflow.actors.worker._children import reap_dropped
from ontoflow.runtime.loop import stop_signals

__all__ = ["PARENT_CHECK_MS", "THREADS_EXIT_S", "StopRequests", "restore_stdio"]

log = structlog.get_logger()

#: How long a drained worker process may take to exit while a capability's thread still runs.
THREADS_EXIT_S = 5.0

#: How often a worker asks whether its supervising parent is still its parent, and whether its
#: stop signals still have its handlers.
PARENT_CHECK_MS = 500


class StopRequests:
    """Waits for the first request to stop a worker process, and absorbs the later ones.

    Args:
        worker_id: named in the log lines (``worker_stopping``, ``worker_orphaned``).
        parent_pid: the supervising parent's pid (None: not watched).
        sleep: the host's wait of so many milliseconds (``HostTimers.sleep``: ends on a Tick).
    """

    def __init__(self, worker_id: str, parent_pid: int | None = None,
                 sleep: Callable[[float], Awaitable[None]] | None = None) -> None:
        self._worker_id = worker_id
        self._parent_pid = parent_pid
        self._sleep = sleep
        self._signals: Any = None
        self._handlers: dict[int, Any] = {}  # the handlers ``listening`` installed, by signal
        self._exit: threading.Timer | None = None
        self._stdio: dict[int, int] = {}  # copies of fds 0, 1, 2 while listening (``restore_stdio``)

    @contextmanager
    def listening(self) -> Iterator[None]:
        """Catch the stop signals while inside: open before anyone knows the host started, so
        none is missed; a second one while the host drains is absorbed, not fatal."""
        signums = stop_signals()
        with anyio.open_signal_receiver(*signums) as self._signals:
            self._handlers = {signum: signal.getsignal(signum) for signum in signums}
            for fd in (0, 1, 2):
                with suppress(OSError):  # started without it
                    self._stdio[fd] = os.dup(fd)  # not inherited by a step's children
            original = signal.signal
            signal.signal = partial(_kept, original, self._handlers, self._worker_id)  # type: ignore[assignment]
            try:
                yield
            finally:
                signal.signal = original  # the receiver's exit puts the defaults back
                for copy in self._stdio.values():
                    os.close(copy)
                self._stdio = {}

    async def wait(self) -> None:
        """Return at the first stop request (inside ``listening``): a signal, logged
        ``worker_stopping``, or the parent gone, logged ``worker_orphaned``."""
        async with anyio.create_task_group() as tg:
            if self._sleep is not None:
                tg.start_soon(self._watch, tg.cancel_scope)
            async for signum in self._signals:
                log.info("worker_stopping", worker_id=self._worker_id, signal=signal.Signals(signum).name)
                break
            tg.cancel_scope.cancel()

    def bound_exit(self, after_s: float, running: int) -> None:
        """Once drained, with ``running`` steps left: end this process (exit 1) unless
        ``stopped`` is called within ``after_s`` (at least ``BLOCKED_GRACE_S``: a step that
        stops when cancelled needs a moment too; see the module docstring)."""
        after_s = max(after_s, BLOCKED_GRACE_S)
        if running:
            self._exit = threading.Timer(after_s, _stuck, args=(self._worker_id, running, after_s))
            self._exit.daemon = True
            self._exit.start()

    def stopped(self) -> None:
        """Every step has ended: the process goes on to shut its capabilities down (no exit)."""
        if self._exit is not None:
            self._exit.cancel()

    def exit_despite_threads(self) -> None:
        """The worker is drained and shut down: if threads other than the interpreter's and
        anyio's are left running (not daemons), log them and end the process (exit 0) unless it
        has exited by itself ``THREADS_EXIT_S`` later (see the module docstring)."""
        left = [t.name[:60] for t in threading.enumerate()
                if t.is_alive() and not t.daemon and t is not threading.main_thread() and t.name != "AnyIO worker thread"]
        if not left:
            return
        log.warning("worker_threads_left", worker_id=self._worker_id, count=len(left), threads=left[:20])
        timer = threading.Timer(THREADS_EXIT_S, _exit_held)
        timer.daemon = True
        timer.start()

    async def _watch(self, scope: anyio.CancelScope) -> None:
        """Every ``PARENT_CHECK_MS``: put back a stop signal's handler a capability changed, and
        end the wait (``scope``) once the supervising parent is gone."""
        assert self._sleep is not None
        parent = self._parent_pid  # another parent: this one died, even before this process got here
        while True:
            await self._sleep(PARENT_CHECK_MS)
            for signum, handler in self._handlers.items():
                if signal.getsignal(signum) is not handler:
                    signal.signal(signum, handler)
                    log.warning("stop_signal_restored", worker_id=self._worker_id, signal=signal.Signals(signum).name)
            if restored := restore_stdio(self._stdio):
                log.warning("stdio_restored", worker_id=self._worker_id, fds=restored)
            if reaped := reap_dropped():  # zombies of Popen a step dropped unwaited (``_children``)
                log.info("step_children_reaped", worker_id=self._worker_id, count=reaped)
            if parent is not None and os.getppid() != parent:
                log.warning("worker_orphaned", worker_id=self._worker_id, parent_pid=parent)
                scope.cancel()
                return


def _kept(original: Callable[..., Any], ours: dict[int, Any], worker_id: str, signum: int, handler: Any) -> Any:
    """``signal.signal`` while a worker listens: a stop signal keeps the worker's handler
    (returned, as the previous one), any other signal is set as asked. The event loop's own
    handler (``loop.add_signal_handler``, anyio's receiver) is let through."""
    if signum in ours and handler is not ours[signum] and getattr(handler, "__module__", None) != "asyncio.unix_events":
        log.warning("stop_signal_kept", worker_id=worker_id, signal=signal.Signals(signum).name)
        return ours[signum]
    return original(signum, handler)


def restore_stdio(copies: dict[int, int]) -> list[int]:
    """Put each copy back on its fd (``copies``: fd -> a duplicate of it) when that fd is closed.

    Returns:
        The fds that were closed (and are now their copies again).
    """
    restored = []
    for fd, copy in copies.items():
        try:
            os.fstat(fd)
        except OSError:
            os.dup2(copy, fd)
            restored.append(fd)
    return restored


def _exit_held() -> None:
    for stream in (sys.stdout, sys.stderr):
        with suppress(Exception):
            if stream is not None:
                stream.flush()
    os._exit(0)  # drained and shut down: only a capability's thread was left


def _stuck(worker_id: str, running: int, after_s: float) -> None:
    log.error("worker_stop_stuck", worker_id=worker_id, running=running, after_s=after_s)
    if sys.stderr is not None:
        sys.stderr.write(f"ontoflow: {running} step{'s' if running > 1 else ''} still running {after_s:g} s after "
                         "being cancelled (the capability ignores cancellation): the worker exits without waiting "
                         "(--cancel-grace-s)\n")
        sys.stderr.flush()
    os._exit(EXIT_BLOCKED)  # the event loop is fine, but the task group holding the step never ends
