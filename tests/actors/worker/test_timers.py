"""Time on the worker host's Ticks: waits end on a Tick whose "now" reached them (a virtual
clock here), jobs repeat, and the reconnect backoff is runtime.retry's policy (issue 12)."""

from __future__ import annotations

import itertools
import random

import anyio
import pytest

from ontoflow.actors.worker import HostTimers, ReconnectBackoff, WorkerHost
from ontoflow.protocols.messages import Ready
from ontoflow.runtime.transport import open_router, shared_context

pytestmark = pytest.mark.anyio

_names = itertools.count()


class _Unit(random.Random):
    """A "random" source that always draws ``unit`` (0.5: no jitter at all)."""

    def __init__(self, unit: float) -> None:
        super().__init__()
        self.unit = unit

    def random(self) -> float:
        return self.unit


def test_the_backoff_doubles_up_to_its_ceiling_and_a_welcome_resets_it() -> None:
    backoff = ReconnectBackoff(1.0, 32.0, random=_Unit(0.5))
    waits = [backoff.next_ms(welcomed=False) for _ in range(8)]
    assert waits == [1000, 2000, 4000, 8000, 16000, 32000, 32000, 32000]
    assert backoff.next_ms(welcomed=True) == 1000  # a welcomed session ended: start again
    assert backoff.next_ms(welcomed=False) == 1000 and backoff.next_ms(welcomed=False) == 2000
    for _ in range(5000):  # days of a daemon down: the count stops at the ceiling, nothing overflows
        backoff.next_ms(welcomed=False)
    assert backoff.next_ms(welcomed=False) == 32000


@pytest.mark.parametrize(("unit", "factor"), [(0.0, 0.75), (0.999999, 1.25)])
def test_the_backoff_is_jittered_by_a_quarter(unit: float, factor: float) -> None:
    backoff = ReconnectBackoff(0.05, 0.2, random=_Unit(unit))
    assert [round(backoff.next_ms(welcomed=False), 1) for _ in range(4)] == [round(n * factor, 1) for n in (50, 100, 200, 200)]


async def test_a_wait_ends_on_the_first_tick_that_reaches_it() -> None:
    now = [1000]
    timers = HostTimers(lambda: now[0])
    ended: list[str] = []

    async def wait(name: str, delay_ms: int) -> None:
        await timers.sleep(delay_ms)
        ended.append(name)

    async with anyio.create_task_group() as tg:
        tg.start_soon(wait, "late", 500)
        tg.start_soon(wait, "soon", 100)
        await anyio.wait_all_tasks_blocked()
        timers.on_tick(1099)
        await anyio.wait_all_tasks_blocked()
        assert ended == [] and len(timers) == 2
        timers.on_tick(1100)
        await anyio.wait_all_tasks_blocked()
        assert ended == ["soon"]
        timers.on_tick(5000)
    assert ended == ["soon", "late"] and len(timers) == 0


async def test_a_job_repeats_at_its_interval_and_survives_its_own_errors() -> None:
    now = [0]
    timers = HostTimers(lambda: now[0])
    runs: list[int] = []

    async def job() -> None:
        runs.append(now[0])
        if len(runs) == 1:
            raise RuntimeError("a bug in the job")

    timers.every(100, job, name="probe")
    with pytest.raises(ValueError, match="interval_ms must be >= 1"):
        timers.every(0, job, name="never")
    async with anyio.create_task_group() as tg:
        tg.start_soon(timers.run_jobs)
        for t in (50, 100, 150, 200, 250, 300):
            await anyio.wait_all_tasks_blocked()
            now[0] = t
            timers.on_tick(t)
        await anyio.wait_all_tasks_blocked()
        tg.cancel_scope.cancel()
    assert runs == [100, 200, 300]


async def test_the_reconnect_wait_ends_on_a_tick_not_on_a_sleep() -> None:
    # An hour of backoff: only a Tick whose "now" is past it (driven here) starts the next session.
    context = shared_context()
    address = f"inproc://timers-reconnect-{next(_names)}"
    readies = 0
    async with open_router(address, context=context) as router, anyio.create_task_group() as tg:
        host = WorkerHost([], address=address, context=context, worker_id="w", reconnect_initial_s=3600,
                          heartbeat_ms=1000, liveness=3)
        await tg.start(host.run)
        with anyio.fail_after(10):
            while readies < 2:
                # Far in the future: the silence that ends the session, then the backoff, are decided on it.
                host.tick(host.now() + 10 * 3600 * 1000)
                with anyio.move_on_after(0.05):
                    readies += sum(isinstance(m, Ready) for _, m in await router.recv_batch())
        assert host.sessions >= 2
        tg.cancel_scope.cancel()
