"""Running a coroutine's first slice in the calling task, and the rest only if it waits."""

from __future__ import annotations

import asyncio

import anyio
import pytest

from ontoflow.actors.worker._inline import resume, start

pytestmark = pytest.mark.anyio


async def _returns_at_once() -> str:
    return "done"


async def _waits_for(event: anyio.Event, log: list[str]) -> str:
    log.append("first slice")
    await event.wait()
    log.append("after the wait")
    return "woken"


async def test_a_coroutine_that_never_waits_is_done_after_start() -> None:
    started = start(_returns_at_once())
    assert started.done and started.result == "done"


async def test_a_coroutine_that_waits_is_finished_by_resume_in_the_same_task() -> None:
    event, log = anyio.Event(), []
    started = start(_waits_for(event, log))
    assert not started.done and log == ["first slice"]
    async def wake() -> None:
        event.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(wake)  # runs once this task waits in resume
        assert await resume(started.coro, started.pending) == "woken"
    assert log == ["first slice", "after the wait"]


async def test_errors_raised_in_either_slice_reach_the_caller() -> None:
    async def fails_at_once() -> None:
        raise ValueError("first")

    async def fails_after_a_wait() -> None:
        await anyio.sleep(0)
        raise ValueError("second")

    with pytest.raises(ValueError, match="first"):
        start(fails_at_once())
    started = start(fails_after_a_wait())
    with pytest.raises(ValueError, match="second"):
        await resume(started.coro, started.pending)


async def test_a_cancel_scope_entered_in_the_first_slice_cancels_the_task_that_resumes() -> None:
    finished: list[str] = []

    async def times_out() -> str:
        with anyio.move_on_after(0.01) as scope:
            await anyio.sleep_forever()
        finished.append("scope exited")
        return "timed out" if scope.cancelled_caught else "not cancelled"

    async def host_task(results: list[str]) -> None:
        started = start(times_out())
        assert not started.done
        results.append(await resume(started.coro, started.pending))

    results: list[str] = []
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(host_task, results)
    assert results == ["timed out"] and finished == ["scope exited"]
    assert asyncio.current_task().cancelling() == 0


async def test_cancelling_the_task_reaches_the_coroutine_and_runs_its_cleanup() -> None:
    cleaned: list[str] = []
    parked = anyio.Event()

    async def waits_forever() -> None:
        try:
            parked.set()
            await anyio.sleep_forever()
        finally:
            cleaned.append("cleanup")

    async def host_task() -> None:
        started = start(waits_forever())
        await resume(started.coro, started.pending)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(host_task)
            await parked.wait()
            tg.cancel_scope.cancel()
    assert cleaned == ["cleanup"]
