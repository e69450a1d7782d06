"""The worker host's step runners, driven directly (no socket): concurrency, order, Cancel."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import msgspec
import pytest

from ontoflow.actors.capability import Capability, Result
from ontoflow.actors.worker import WorkerHost
from ontoflow.protocols import CapabilityMetadata
from ontoflow.protocols.messages import Invoke, Outcome
from ontoflow.runtime.codec import decode

pytestmark = pytest.mark.anyio


class Gate(Capability):
    """Waits for ``release`` when ``test.wait`` is true; counts the steps it started."""

    metadata = CapabilityMetadata(
        id="test.gate",
        input_schema={"type": "object", "properties": {"test.wait": {"type": "boolean", "default": False}}},
        idempotent=True,
        timeout_ms=None,
    )
    started: list[str] = []
    running = 0
    most_at_once = 0
    release: anyio.Event

    async def execute(self, inputs, context):
        Gate.started.append(context.system.step_id)
        if not inputs["test.wait"]:
            return Result(event="success")
        Gate.running += 1
        Gate.most_at_once = max(Gate.most_at_once, Gate.running)
        try:
            await Gate.release.wait()
            await anyio.sleep(0)  # a cancel-aware await after the wake: the runner must not be "cancelling"
        finally:
            Gate.running -= 1
        return Result(event="success")


class Collector:
    """Stands in for the session: records what the host delivers, in order."""

    def __init__(self) -> None:
        self.outcomes: list[Outcome] = []
        self.changed = anyio.Event()

    def flush(self) -> None:
        pass

    def send(self, message: Outcome | msgspec.Raw) -> None:
        if isinstance(message, msgspec.Raw):  # answers travel encoded
            [message] = decode(bytes(message))
        self.outcomes.append(message)
        self.changed.set()
        self.changed = anyio.Event()

    async def wait_for(self, count: int) -> list[Outcome]:
        with anyio.fail_after(5):
            while len(self.outcomes) < count:
                await self.changed.wait()
        return self.outcomes


def _invoke(step: str, wait: bool = False) -> Invoke:
    from ontoflow.protocols.context import StepContext, SystemMetadata

    context = StepContext(system=SystemMetadata(run_id="r", node="n", block="b", step_id=step))
    return Invoke(run_id="r", step_id=step, attempt=1, capability="test.gate", inputs={"test.wait": wait}, context=context)


@asynccontextmanager
async def _host(slots: int) -> AsyncIterator[tuple[WorkerHost, Collector]]:
    Gate.started, Gate.running, Gate.most_at_once, Gate.release = [], 0, 0, anyio.Event()
    host = WorkerHost([Gate()], address="inproc://unused", slots=slots)
    collector = Collector()
    host._session = collector  # type: ignore[assignment]
    async with anyio.create_task_group() as tg:
        for _ in range(slots):
            tg.start_soon(host._step_runner)
        yield host, collector
        tg.cancel_scope.cancel()


async def test_steps_that_await_run_concurrently_up_to_the_slots() -> None:
    async with _host(slots=3) as (host, collector):
        for n in range(5):
            assert host.enqueue(_invoke(f"s{n}", wait=True)) is None
        with anyio.fail_after(5):
            while len(Gate.started) < 3:
                await anyio.sleep(0)
        assert Gate.running == 3 and Gate.started == ["s0", "s1", "s2"]  # the others wait for a slot
        Gate.release.set()
        outcomes = await collector.wait_for(5)
    assert Gate.most_at_once == 3
    assert sorted(o.step_id for o in outcomes) == [f"s{n}" for n in range(5)]
    assert all(o.event == "success" for o in outcomes)


async def test_steps_that_do_not_await_are_answered_in_order() -> None:
    async with _host(slots=4) as (host, collector):
        for n in range(20):
            host.enqueue(_invoke(f"s{n}"))
        outcomes = await collector.wait_for(20)
    assert [o.step_id for o in outcomes] == [f"s{n}" for n in range(20)]


async def test_cancel_stops_a_running_step_and_a_queued_one_never_starts() -> None:
    async with _host(slots=1) as (host, collector):
        host.enqueue(_invoke("running", wait=True))
        host.enqueue(_invoke("queued", wait=True))
        with anyio.fail_after(5):
            while Gate.running < 1:
                await anyio.sleep(0)
        host.cancel("r", "queued", 1)
        host.cancel("r", "running", 1)
        host.cancel("r", "running", 1)  # twice: still one answer
        host.cancel("r", "unknown", 1)  # over already, or never here: nothing to do
        outcomes = await collector.wait_for(2)
        assert [(o.step_id, o.event, o.reason) for o in outcomes] == [
            ("running", "cancelled", "cancelled"),
            ("queued", "cancelled", "cancelled"),
        ]
        assert Gate.started == ["running"]
        # The runner that was cancelled serves on, with no cancellation left pending on it.
        Gate.release.set()
        host.enqueue(_invoke("after", wait=True))
        outcomes = await collector.wait_for(3)
        assert (outcomes[2].step_id, outcomes[2].event) == ("after", "success")
        assert host.statistics()["running"] == 0


async def test_stopping_the_host_cancels_its_runners() -> None:
    async with _host(slots=2) as (host, _collector):
        host.enqueue(_invoke("s0", wait=True))
        with anyio.fail_after(5):
            while Gate.running < 1:
                await anyio.sleep(0)
    # Leaving the block cancelled the task group: the waiting step was interrupted, not answered.
    assert Gate.running == 0
    assert asyncio.current_task().cancelling() == 0
