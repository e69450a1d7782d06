"""The edge's runner tasks: no job waits behind another's await; idle runners are reused, bounded."""

from __future__ import annotations

import anyio
import pytest

from ontoflow.actors.orchestrator._runners import Runners

pytestmark = pytest.mark.anyio


async def test_a_job_never_waits_behind_another_that_awaits() -> None:
    release = anyio.Event()
    done: list[str] = []
    all_quick_done = anyio.Event()

    async def work(job: str) -> None:
        if job == "slow":
            await release.wait()
        done.append(job)
        if {"a", "b"} <= set(done):
            all_quick_done.set()

    runners: Runners[str] = Runners(work)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for job in ("slow", "a", "b"):
                runners.hand(tg, job)
            await all_quick_done.wait()  # while "slow" still awaits
            assert "slow" not in done
            release.set()
            while len(done) < 3:
                await anyio.sleep(0)
            tg.cancel_scope.cancel()
    assert sorted(done) == ["a", "b", "slow"]


async def test_idle_runners_are_woken_rather_than_started_and_are_bounded() -> None:
    done: list[int] = []
    runners: Runners[int] = Runners(lambda job: _append(done, job), idle=2)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for i in range(4):
                runners.hand(tg, i)
            while runners.idle() < 2 or len(done) < 4:
                await anyio.sleep(0)
            assert runners.idle() == 2  # the other two ended
            runners.hand(tg, 4)  # woken: one fewer idle until it parks again
            assert runners.idle() == 1
            while len(done) < 5 or runners.idle() < 2:
                await anyio.sleep(0)
            tg.cancel_scope.cancel()
    assert sorted(done) == [0, 1, 2, 3, 4]


async def _append(done: list[int], job: int) -> None:
    await anyio.sleep(0)
    done.append(job)
