"""Runner tasks: each answers handed-in jobs one at a time and parks between them.

A job that awaits (the edge's ``Ask``: it waits for its plan's run) needs a task of its own,
and anyio's ``start_soon`` makes a cancel scope, an event and a wrapper coroutine per task:
starting one per ask was the edge's largest cost on the event loop. A runner that parks
instead costs one wake-up per job. Each job handed in wakes an idle runner or starts a new
one, and a runner takes jobs until none is left before it parks, so no job waits behind
another job's await; past ``idle`` idle runners, a runner ends rather than park.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

import anyio

__all__ = ["Runners"]

T = TypeVar("T")


class Runners(Generic[T]):
    """Runner tasks calling ``work`` on each job (see the module docstring).

    Args:
        work: awaited once per job; it handles its own errors (one raising ends its runner
            and goes to the task group, as a task of its own would).
        idle: how many idle runners are kept.
    """

    def __init__(self, work: Callable[[T], Awaitable[None]], *, idle: int = 32) -> None:
        self._work = work
        self._most_idle = idle
        self._jobs: deque[T] = deque()
        self._idle: list[anyio.Event] = []  # the wake-up of each idle runner

    def hand(self, tg: anyio.abc.TaskGroup, job: T) -> None:
        """Have ``job`` done by a runner in ``tg`` (woken, or started when none is idle)."""
        self._jobs.append(job)
        if self._idle:
            self._idle.pop().set()
        else:
            tg.start_soon(self._run)

    def idle(self) -> int:
        """How many runners are parked."""
        return len(self._idle)

    async def _run(self) -> None:
        jobs, work = self._jobs, self._work
        while True:
            while jobs:
                await work(jobs.popleft())
            if len(self._idle) >= self._most_idle:
                return
            wake = anyio.Event()
            self._idle.append(wake)
            await wake.wait()
