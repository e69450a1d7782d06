"""Time on the worker host's Ticks: waits that end on a Tick, jobs repeated at an interval, and
the reconnect backoff.

The host's timer delivers a :class:`~runtime.actor.Tick` every few milliseconds
(``_session.tick_ms_for``); :meth:`HostTimers.on_tick` ends every wait whose due time that Tick's
"now" has reached. Nothing here sleeps on its own: the end of a wait is a decision taken on a
Tick, as the heartbeats and the silences of a session are, so it is driven by one clock (the
host's) and can be driven by hand in a test (``host.tick(now)``).

The reconnect backoff is the project's retry policy (``runtime.retry``, seed 001): exponential
from ``initial_s``, doubling, capped at ``max_s``, each delay within +-``jitter`` of its nominal
value (so workers cut off by one daemon restart do not all knock again at the same instant).
"""

from __future__ import annotations

import heapq
import itertools
import random as _random
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import structlog

from ontoflow.protocols.capability import RetryPolicy
from ontoflow.runtime.retry import backoff_ms, nominal_backoff_ms

__all__ = ["HostTimers", "ReconnectBackoff"]

log = structlog.get_logger()

#: The jitter of the reconnect backoff (the capability base's default, +-25%).
RECONNECT_JITTER = 0.25

#: The most liveness windows a session waits for its Welcome (``ReconnectBackoff.patience``).
MAX_PATIENCE = 8


class HostTimers:
    """Waits and repeated jobs on the host's Ticks (see the module docstring).

    Args:
        clock: the host's clock ("now" in milliseconds), the one its Ticks carry.
    """

    def __init__(self, clock: Callable[[], int]) -> None:
        self._clock = clock
        self._due: list[tuple[int, int, anyio.Event]] = []  # a heap of (due ms, order, waiter)
        self._order = itertools.count()
        self._jobs: list[tuple[Callable[[], Awaitable[Any]], int, str]] = []

    def __len__(self) -> int:
        """Waits not ended yet (a cancelled one counts until its due time passes)."""
        return len(self._due)

    def on_tick(self, now_ms: int) -> None:
        """End every wait due at ``now_ms`` or before (the host calls it with each Tick)."""
        due = self._due
        while due and due[0][0] <= now_ms:
            heapq.heappop(due)[2].set()

    async def sleep_until(self, due_ms: int) -> None:
        """Wait for the first Tick at or after ``due_ms`` (host clock)."""
        event = anyio.Event()
        heapq.heappush(self._due, (due_ms, next(self._order), event))
        await event.wait()

    async def sleep(self, delay_ms: float) -> None:
        """Wait for the first Tick ``delay_ms`` from now or later."""
        await self.sleep_until(self._clock() + round(delay_ms))

    def every(self, interval_ms: int, job: Callable[[], Awaitable[Any]], *, name: str) -> None:
        """Run ``job`` every ``interval_ms`` once the host runs (the first one an interval after
        the start; the next interval counted from the end of the last run). Register jobs
        before the host's ``run``.

        Args:
            interval_ms: the interval, >= 1.
            job: what to run; an exception it raises is logged (``host_job_failed``) and the
                job runs again at the next interval.
            name: what the job is, for the log.

        Raises:
            ValueError: when ``interval_ms`` < 1.
        """
        if interval_ms < 1:
            raise ValueError(f"interval_ms must be >= 1, got {interval_ms}")
        self._jobs.append((job, interval_ms, name))

    async def run_jobs(self) -> None:
        """Run every registered job at its interval, until cancelled (the host starts it)."""
        async with anyio.create_task_group() as tg:
            for job, interval_ms, name in self._jobs:
                tg.start_soon(self._repeat, job, interval_ms, name)

    async def _repeat(self, job: Callable[[], Awaitable[Any]], interval_ms: int, name: str) -> None:
        while True:
            await self.sleep(interval_ms)
            try:
                await job()
            except Exception as exc:  # a job's bug must not take the host down
                log.warning("host_job_failed", job=name, error=type(exc).__name__)


class ReconnectBackoff:
    """How long a worker host waits before it registers again.

    After a session that was welcomed the wait is ``initial_s``; after each one that was not,
    it doubles, up to ``max_s`` (as before: ``runtime.retry``'s nominal delay), each wait
    jittered by +-``jitter``.

    Args:
        initial_s: the first wait.
        max_s: the ceiling of the nominal wait.
        jitter: the spread of each wait around its nominal value (0 <= jitter < 1).
        random: the source of jitter (a fresh ``random.Random()`` by default).
    """

    def __init__(self, initial_s: float, max_s: float, *, jitter: float = RECONNECT_JITTER,
                 random: _random.Random | None = None) -> None:
        self.policy = RetryPolicy(initial_ms=initial_s * 1000, multiplier=2.0, max_ms=max(max_s, initial_s) * 1000,
                                  jitter=jitter)
        self._random = random if random is not None else _random.Random()
        self._retry = 1  # runtime.retry's 1-based retry number of the next wait
        self._unwelcomed = 0  # sessions in a row that ended without a Welcome

    def patience(self) -> int:
        """How many liveness windows the next session waits for its Welcome: 1 after a
        welcomed session, doubling with each session in a row that was not, up to
        ``MAX_PATIENCE``.

        Why: a daemon that has just restarted (recovering its journal on a loaded machine) can
        take longer than one liveness window to answer a Ready. A session that gave up then
        was registered by the daemon, but its Welcome went to a closed socket; with a fixed
        window every session would give up the same way, and the worker would never register
        again (its Readys would keep arriving just as it leaves).
        """
        return 1 << min(self._unwelcomed, MAX_PATIENCE.bit_length() - 1)

    @property
    def unwelcomed(self) -> int:
        """Sessions in a row that ended without a Welcome (counted by ``next_ms``)."""
        return self._unwelcomed

    def next_ms(self, welcomed: bool) -> float:
        """The wait after a session that ended, in milliseconds.

        Args:
            welcomed: whether the orchestrator had welcomed that session (resets the doubling).
        """
        if welcomed:
            self._retry = 1
        self._unwelcomed = 0 if welcomed else self._unwelcomed + 1
        delay = backoff_ms(self.policy, self._retry, self._random.random())
        # Stop counting at the ceiling: the count only feeds the exponent, which must not overflow.
        if not welcomed and nominal_backoff_ms(self.policy, self._retry) < self.policy.max_ms:
            self._retry += 1
        return delay
