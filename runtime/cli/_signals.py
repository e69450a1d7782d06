"""Stop signals of a command that runs a run in this process: ``run``, ``plan run``,
``pipeline run``, and the ``ask`` and ``chat`` that run embedded (:func:`run_stoppable`).

SIGINT (Ctrl-C) and SIGTERM (``kill``, ``timeout``, a supervisor) end them the same way: the
run in progress is cancelled (its running steps are sent a Cancel), what it did so far is
printed as its result (the steps that ended, each with its event, and the step cancelled), its
local cluster shuts down (worker processes stopped, temporary folders removed), and the exit
code is 130 for SIGINT and 143 for SIGTERM, the codes of a process those signals ended. Before,
SIGTERM killed the command at once, and its worker processes went on running, reconnecting to
an orchestrator that was gone, for ever; Ctrl-C printed nothing of the run.

A signal that comes once the command has its answer changes nothing: a run that ended before
it (the signal came during the shutdown after the run, or while the answer was printed) is
printed as it ended, with its exit code (0 when it completed). A second signal while the
cluster shuts down does not cut the shutdown short (it is bounded: a worker process has 5 s).
But a second signal that comes before the event loop ran once since the first (code blocks
the loop: a capability's ``execute`` in this process, ``--transport inproc``, calling a blocking
client) is raised where the code stands, as :class:`runtime.errors.Interrupted` (a
``KeyboardInterrupt`` the capability base lets through), and the verb ends at once, 130 or
143: before, the first signal's cancellation could never run and no number of Ctrl-C got the
person out.

:data:`STOP` is installed by those verbs around their event loop (a signal ignored when the
process started, as SIGINT in a background job of a script, stays ignored). Inside the loop a
verb asks for a scope the signal cancels (:meth:`StopSignals.stopping`); before any such scope,
a signal stops the verb at once, as Python's default does (``KeyboardInterrupt``,
:class:`Terminated` for SIGTERM). For ``ask`` and ``chat``, a signal ends the conversation with
130 or 143 and prints nothing more (an embedded run ends with the command). The other verbs
keep Python's and asyncio's handling (a client's wait, the daemon and a worker have their own).
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, TypeVar

import anyio

from ontoflow.runtime.cli._shared import EXIT_INTERRUPTED
from ontoflow.runtime.errors import Interrupted
from ontoflow.runtime.loop import run as run_async

__all__ = ["EXIT_TERMINATED", "STOP", "StopSignals", "Terminated", "exit_code_of", "run_stoppable"]

T = TypeVar("T")

#: SIGTERM's exit code (128 + 15), as for a process that signal ended.
EXIT_TERMINATED = 128 + signal.SIGTERM


class Terminated(Interrupted):
    """Raised when SIGTERM stops a verb outside an event loop, or a second one comes while the
    loop is blocked (a ``KeyboardInterrupt``, so that every place that ends on Ctrl-C ends on
    it too; its exit code is 143)."""


def exit_code_of(signum: int | None) -> int:
    """The exit code of a verb a signal stopped: 143 for SIGTERM, else 130."""
    return EXIT_TERMINATED if signum == signal.SIGTERM else EXIT_INTERRUPTED


class StopSignals:
    """SIGINT and SIGTERM for one verb (see the module docstring).

    Attributes:
        signum: the first stop signal received, or None.
    """

    _SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.signum: int | None = None
        self._wake: Callable[[], None] | None = None  # set while a loop may be stopped
        self._settled = False
        self._unheard = False  # a signal's wake is scheduled and the loop has not run it yet

    @contextmanager
    def installed(self) -> Iterator[StopSignals]:
        """Handle the stop signals in the block (main thread only; else a no-op); the handlers
        found are put back after."""
        self.signum, self._wake, self._settled, self._unheard = None, None, False, False
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        # A signal ignored at start (SIGINT in a script's background job) stays ignored; one
        # whose handler is not Python's (None: set by C code) is left alone, as it could not be
        # put back.
        previous = {sig: handler for sig in self._SIGNALS
                    if (handler := signal.getsignal(sig)) is not signal.SIG_IGN and handler is not None}
        for sig in previous:
            signal.signal(sig, self._handle)
        try:
            yield self
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self._settled:
            return
        if self.signum is None:
            self.signum = signum
        elif self._unheard:  # the loop has not run since the last signal: code blocks it
            raise Terminated if signum == signal.SIGTERM else Interrupted
        if self._wake is not None:
            self._wake()
            return
        raise Terminated if signum == signal.SIGTERM else Interrupted

    def settle(self) -> None:
        """The verb has its answer: a stop signal from now on is ignored."""
        self._settled = True

    @property
    def stopped(self) -> bool:
        """Whether a stop signal came."""
        return self.signum is not None

    def exit_code(self) -> int:
        """130 (SIGINT) or 143 (SIGTERM)."""
        return exit_code_of(self.signum)

    @contextmanager
    def stopping(self) -> Iterator[anyio.CancelScope]:
        """In an event loop: a scope a stop signal cancels (one that came before cancels it at
        once). After the block, a signal is only noted: what follows (a cluster's shutdown) is
        not cut short, and the loop is never interrupted where it stands."""
        scope = anyio.CancelScope()
        loop = asyncio.get_running_loop()
        # The handler runs between two bytecodes of this thread: it only schedules the cancel
        # (what asyncio.Runner's own SIGINT handler does), and notes it until the loop runs it.
        self._wake = lambda: self._schedule(loop, scope.cancel)
        if self.signum is not None:
            scope.cancel()
        try:
            with scope:
                yield scope
        finally:
            self._wake = lambda: self._schedule(loop, _noted)

    def _schedule(self, loop: asyncio.AbstractEventLoop, then: Callable[[], None]) -> None:
        """Have the loop run ``then``; until it has, a second signal is raised where it comes."""

        def heard() -> None:
            self._unheard = False
            then()

        try:
            loop.call_soon_threadsafe(heard)
        except RuntimeError:  # the loop is closed: nothing can block it any more
            return
        self._unheard = True


def _noted() -> None:
    """A stop signal after a verb's stoppable part: noted in ``signum`` only."""


#: The process's stop signals (``main`` installs them around the verb).
STOP = StopSignals()


def run_stoppable(func: Callable[[], Awaitable[T]], *, loop: Callable[..., Any] = run_async) -> T | None:
    """Run ``func`` on an event loop (``loop``: ``runtime.loop.run`` by default) with the stop
    signals handled: a signal cancels it (the local cluster it opened shuts down, its worker
    processes stopped); None then, and ``STOP.exit_code()`` is the verb's exit code."""

    async def go() -> T | None:
        with STOP.stopping():
            return await func()
        return None

    with STOP.installed():
        try:
            return loop(go)
        finally:
            STOP.settle()
