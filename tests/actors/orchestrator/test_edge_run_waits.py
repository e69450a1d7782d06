"""Two turns waiting on one run (``RunWaits``): one withdrawn leaves the other waiting.

Before, the first turn to stop waiting took the run's event away: a turn withdrawn (its client
gone) left the other one waiting on an event no run end could reach any more, and cancelled the
run the other one still waited for.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from ontoflow.actors.orchestrator._edge_runs import RunWaits

pytestmark = pytest.mark.anyio


class _Runs:
    """The four things ``RunWaits`` asks of the orchestrator, over one table of run results."""

    def __init__(self) -> None:
        self.results: dict[str, Any] = {}
        self.on_run_ended: list[Any] = []
        self.cancelled: list[str] = []

    def status(self, run_id: str) -> Any:
        return self.results.get(run_id)

    def questions(self, run_id: str) -> list[Any]:
        return []

    def cancel(self, run_id: str, reason: str) -> None:
        self.cancelled.append(run_id)

    def end(self, run_id: str) -> None:
        self.results[run_id] = result = SimpleNamespace(run_id=run_id, status="completed")
        for observer in list(self.on_run_ended):
            observer(result)


async def test_a_withdrawn_turn_leaves_the_other_turn_on_its_run_waiting_and_the_run_running() -> None:
    runs = _Runs()
    waits = RunWaits(runs)  # type: ignore[arg-type]
    got: list[Any] = []

    async def wait() -> None:
        got.append(await waits.settled("r1"))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            gone = anyio.CancelScope()

            async def withdrawn() -> None:
                with gone:
                    await waits.settled("r1")

            tg.start_soon(withdrawn)
            tg.start_soon(wait)
            while waits.waiting("r1") != 2:
                await anyio.lowlevel.checkpoint()
            gone.cancel()  # the first turn's client went away
            while waits.waiting("r1") != 1:
                await anyio.lowlevel.checkpoint()
            assert runs.cancelled == []  # the other turn still wants the answer
            runs.end("r1")
    assert [r.status for r in got] == ["completed"]
    assert runs.on_run_ended == [] and waits.waiting("r1") == 0


async def test_the_last_turn_withdrawn_cancels_its_run() -> None:
    runs = _Runs()
    waits = RunWaits(runs)  # type: ignore[arg-type]
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(waits.settled, "r1")
            while waits.waiting("r1") != 1:
                await anyio.lowlevel.checkpoint()
            tg.cancel_scope.cancel()
    assert runs.cancelled == ["r1"] and runs.on_run_ended == []


async def test_a_turn_withdrawn_while_another_records_the_runs_question_leaves_the_run_running() -> None:
    # Both turns woke on the run's question; one is recording it for its session (within
    # ``withdrawing``, as ``EdgeService._finish``) when the other's client goes (review15).
    runs = _Runs()
    waits = RunWaits(runs)  # type: ignore[arg-type]
    recording, recorded = anyio.Event(), anyio.Event()

    async def records() -> None:
        with waits.withdrawing("r1"):
            recording.set()
            await recorded.wait()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(records)
            await recording.wait()
            gone, entered, left = anyio.CancelScope(), anyio.Event(), anyio.Event()

            async def withdrawn() -> None:
                with gone, waits.withdrawing("r1"):
                    entered.set()
                    await anyio.sleep_forever()
                left.set()

            tg.start_soon(withdrawn)
            await entered.wait()
            gone.cancel()
            await left.wait()
            recorded.set()
    assert runs.cancelled == []
