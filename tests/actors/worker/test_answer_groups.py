"""The answers of steps run back to back are handed over together (``answer_many``), never
held behind a step that waits, nor behind slots all taken."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from ontoflow.actors.worker._scheduler import StepScheduler
from ontoflow.protocols.messages import Outcome
from ontoflow.runtime.batching import SEND_CHUNK
from tests.actors.worker.test_runners import Gate, _invoke, _reset_gate, _until

pytestmark = pytest.mark.anyio


class Groups:
    """The groups ``answer_many`` was handed, and the single answers, in order."""

    def __init__(self) -> None:
        self.groups: list[list[str]] = []
        self.singles: list[str] = []

    def answer(self, outcome: Outcome) -> None:
        self.singles.append(outcome.step_id)

    def answer_many(self, outcomes: list[Outcome]) -> None:
        assert all(o.event == "success" for o in outcomes)
        self.groups.append([o.step_id for o in outcomes])

    def answered(self) -> list[str]:
        return [step for group in self.groups for step in group] + self.singles


@asynccontextmanager
async def _scheduler(slots: int) -> AsyncIterator[tuple[StepScheduler, Groups]]:
    _reset_gate()
    groups = Groups()
    scheduler = StepScheduler({"test.gate": Gate()}, slots=slots, answer=groups.answer, answer_many=groups.answer_many)
    async with anyio.create_task_group() as tg:
        tg.start_soon(scheduler.run)
        await anyio.wait_all_tasks_blocked()  # every runner parked: the one woken runs what is queued
        yield scheduler, groups
        tg.cancel_scope.cancel()


async def test_steps_run_back_to_back_are_answered_in_groups_of_at_most_a_chunk() -> None:
    count = 2 * SEND_CHUNK + 5
    async with _scheduler(slots=4) as (scheduler, groups):
        for n in range(count):
            scheduler.enqueue(_invoke(f"s{n}"))
        await _until(lambda: len(groups.answered()) == count)
    assert groups.answered() == [f"s{n}" for n in range(count)] and not groups.singles
    assert [len(g) for g in groups.groups] == [SEND_CHUNK, SEND_CHUNK, 5]


async def test_answers_run_before_a_waiting_step_do_not_wait_for_it() -> None:
    async with _scheduler(slots=2) as (scheduler, groups):
        for step in ("s0", "s1"):
            scheduler.enqueue(_invoke(step))
        scheduler.enqueue(_invoke("a", wait=True))
        await _until(lambda: groups.answered() == ["s0", "s1"])
        assert Gate.running == 1  # "a" still waits
        Gate.release.set()
        await _until(lambda: len(groups.answered()) == 3)
    assert groups.singles == ["a"]


async def test_answers_leave_when_the_slots_are_taken() -> None:
    async with _scheduler(slots=2) as (scheduler, groups):
        scheduler.enqueue(_invoke("a", wait=True))
        await _until(lambda: Gate.running == 1)
        for step in ("s0", "s1", "s2"):
            scheduler.enqueue(_invoke(step))
        scheduler.enqueue(_invoke("b", wait=True))
        scheduler.enqueue(_invoke("s3"))
        await _until(lambda: Gate.running == 2)  # both slots wait: "s3" cannot start
        await _until(lambda: groups.answered() == ["s0", "s1", "s2"])
        assert scheduler.queued == 1
        Gate.release.set()
        await _until(lambda: len(groups.answered()) == 6)
    assert sorted(groups.answered()) == ["a", "b", "s0", "s1", "s2", "s3"]
