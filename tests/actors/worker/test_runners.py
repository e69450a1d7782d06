"""The worker host's step scheduler: concurrency, order, Cancel, and its runners reading a
mailbox (the kernel's in-memory one) with the answers of a batch leaving together."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from ontoflow.actors.capability import Capability, Result
from ontoflow.actors.worker._scheduler import StepScheduler
from ontoflow.protocols import CapabilityMetadata
from ontoflow.protocols.messages import Cancel, Invoke, Outcome
from ontoflow.runtime.actor import BatchActor, MemoryMailbox

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
    """Where the scheduler's answers go, in order."""

    def __init__(self) -> None:
        self.outcomes: list[Outcome] = []
        self.changed = anyio.Event()

    def answer(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)
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


def _reset_gate() -> None:
    Gate.started, Gate.running, Gate.most_at_once, Gate.release = [], 0, 0, anyio.Event()


async def _until(condition) -> None:
    with anyio.fail_after(5):
        while not condition():
            await anyio.sleep(0)


@asynccontextmanager
async def _scheduler(slots: int) -> AsyncIterator[tuple[StepScheduler, Collector]]:
    _reset_gate()
    collector = Collector()
    scheduler = StepScheduler({"test.gate": Gate()}, slots=slots, answer=collector.answer)
    async with anyio.create_task_group() as tg:
        tg.start_soon(scheduler.run)
        yield scheduler, collector
        tg.cancel_scope.cancel()


async def test_steps_that_await_run_concurrently_up_to_the_slots() -> None:
    async with _scheduler(slots=3) as (scheduler, collector):
        for n in range(5):
            assert scheduler.enqueue(_invoke(f"s{n}", wait=True))
        await _until(lambda: len(Gate.started) >= 3)
        assert Gate.running == 3 and Gate.started == ["s0", "s1", "s2"]  # the others wait for a slot
        Gate.release.set()
        outcomes = await collector.wait_for(5)
    assert Gate.most_at_once == 3
    assert sorted(o.step_id for o in outcomes) == [f"s{n}" for n in range(5)]
    assert all(o.event == "success" for o in outcomes)


async def test_steps_that_do_not_await_are_answered_in_order() -> None:
    async with _scheduler(slots=4) as (scheduler, collector):
        for n in range(20):
            scheduler.enqueue(_invoke(f"s{n}"))
        outcomes = await collector.wait_for(20)
    assert [o.step_id for o in outcomes] == [f"s{n}" for n in range(20)]


async def test_an_attempt_already_here_is_not_queued_twice() -> None:
    async with _scheduler(slots=1) as (scheduler, collector):
        assert scheduler.enqueue(_invoke("s0", wait=True))
        assert not scheduler.enqueue(_invoke("s0", wait=True))
        assert len(scheduler) == 1 and list(scheduler) == [("r", "s0", 1)]
        Gate.release.set()
        await collector.wait_for(1)
        await _until(lambda: len(scheduler) == 0)
    assert [o.step_id for o in collector.outcomes] == ["s0"]


async def test_cancel_stops_a_running_step_and_a_queued_one_never_starts() -> None:
    async with _scheduler(slots=1) as (scheduler, collector):
        scheduler.enqueue(_invoke("running", wait=True))
        scheduler.enqueue(_invoke("queued", wait=True))
        await _until(lambda: Gate.running >= 1)
        scheduler.cancel(("r", "queued", 1))
        scheduler.cancel(("r", "running", 1))
        scheduler.cancel(("r", "running", 1))  # twice: still one answer
        scheduler.cancel(("r", "unknown", 1))  # over already, or never here: nothing to do
        outcomes = await collector.wait_for(2)
        assert [(o.step_id, o.event, o.reason) for o in outcomes] == [
            ("running", "cancelled", "cancelled"),
            ("queued", "cancelled", "cancelled"),
        ]
        assert Gate.started == ["running"]
        # The runner that was cancelled serves on, with no cancellation left pending on it.
        Gate.release.set()
        scheduler.enqueue(_invoke("after", wait=True))
        outcomes = await collector.wait_for(3)
        assert (outcomes[2].step_id, outcomes[2].event) == ("after", "success")
        assert len(scheduler) == 0


async def test_a_closed_scheduler_starts_nothing_and_settles_once_the_running_steps_end() -> None:
    async with _scheduler(slots=2) as (scheduler, collector):
        scheduler.enqueue(_invoke("running", wait=True))
        await _until(lambda: Gate.running >= 1)
        scheduler.close()
        scheduler.enqueue(_invoke("queued"))
        assert await scheduler.settle(0) == 1  # no grace: still running
        Gate.release.set()
        assert await scheduler.settle(5) == 0
        await collector.wait_for(1)
        assert scheduler.queued == 1 and Gate.started == ["running"]


async def test_stopping_the_scheduler_cancels_its_runners() -> None:
    async with _scheduler(slots=2) as (scheduler, _collector):
        scheduler.enqueue(_invoke("s0", wait=True))
        await _until(lambda: Gate.running >= 1)
    # Leaving the block cancelled the task group: the waiting step was interrupted, not answered.
    assert Gate.running == 0
    assert asyncio.current_task().cancelling() == 0


class _Host(BatchActor):
    """The least of a worker host on the kernel: Invokes queued for the reading runner,
    Cancels passed on, answers sent through the outbox."""

    def __init__(self, slots: int) -> None:
        super().__init__()
        self.steps = StepScheduler({"test.gate": Gate()}, slots=slots, answer=self.answer, flush=self.outbox.flush)

    def answer(self, outcome: Outcome) -> None:
        self.send(b"", outcome)

    def receive(self, identity: bytes, message: Any, now: int) -> None:
        match message:
            case Invoke():
                self.steps.enqueue(message, wake=False)
            case Cancel(run_id=run_id, step_id=step_id, attempt=attempt):
                self.steps.cancel((run_id, step_id, attempt))


@asynccontextmanager
async def _host(slots: int) -> AsyncIterator[tuple[_Host, MemoryMailbox]]:
    _reset_gate()
    host, mailbox = _Host(slots), MemoryMailbox()
    host.outbox.attach(mailbox)
    host.steps.attach(lambda: host.pump(mailbox))
    async with anyio.create_task_group() as tg:
        tg.start_soon(host.steps.run)
        yield host, mailbox
        tg.cancel_scope.cancel()


async def test_the_runners_read_the_mailbox_and_the_answers_of_a_batch_leave_in_one_flush() -> None:
    async with _host(slots=4) as (_host_, mailbox):
        for n in range(20):
            mailbox.put(_invoke(f"s{n}"))
        with anyio.fail_after(5):
            sent = await mailbox.wait_sent(20)
    assert [m.step_id for _, m in sent] == [f"s{n}" for n in range(20)]
    assert mailbox.flushes == 1


async def test_with_every_slot_busy_a_cancel_is_still_read() -> None:
    async with _host(slots=2) as (host, mailbox):
        mailbox.put(_invoke("a", wait=True))
        mailbox.put(_invoke("b", wait=True))
        await _until(lambda: Gate.running == 2)
        mailbox.put(Cancel(run_id="r", step_id="b", attempt=1))
        with anyio.fail_after(5):
            [(_, outcome)] = await mailbox.wait_sent(1)
        assert (outcome.step_id, outcome.event) == ("b", "cancelled")
        Gate.release.set()
        with anyio.fail_after(5):
            sent = await mailbox.wait_sent(2)
        assert [(m.step_id, m.event) for _, m in sent] == [("b", "cancelled"), ("a", "success")]
        await _until(lambda: len(host.steps) == 0)


async def test_the_reading_runner_spins_only_while_no_step_waits_on_io() -> None:
    from ontoflow.actors.worker import WorkerHost

    real = WorkerHost([Gate()], address="ipc:///nowhere")
    assert real.spin_us > 0 and real.may_spin == real.steps.idle  # the wiring copied below
    async with _host(slots=2) as (host, mailbox):
        host.spin_us = 1  # a window that ends at once: the counters tell what happened
        host.may_spin = host.steps.idle
        mailbox.put(_invoke("a", wait=True))
        mailbox.put(_invoke("s0"))
        with anyio.fail_after(5):
            await mailbox.wait_sent(1)  # s0 answered while "a" waits on I/O
        await anyio.wait_all_tasks_blocked()
        assert mailbox.polls == 0 and host.spin_misses == 0  # the reader parked at once
        Gate.release.set()
        with anyio.fail_after(5):
            await mailbox.wait_sent(2)
        await _until(lambda: host.steps.idle())
        mailbox.put(_invoke("s1"))
        with anyio.fail_after(5):
            await mailbox.wait_sent(3)
        await _until(lambda: host.spin_misses >= 1)  # nothing waits now: it polled before parking
        assert mailbox.polls >= 1


async def test_a_runner_cancelled_while_parked_does_not_break_the_next_wake_up() -> None:
    """A parked runner's task cancelled from outside leaves its (cancelled) future in the idle
    list until that task runs again; a wake-up in that window (a new session attaching its
    mailbox) used to pick it and raise ``InvalidStateError`` out of ``attach``."""
    _reset_gate()
    scheduler = StepScheduler({"test.gate": Gate()}, slots=1, answer=Collector().answer)
    runners = [asyncio.ensure_future(scheduler.runner()) for _ in range(2)]
    await _until(lambda: all(not r.done() for r in runners) and len(scheduler) == 0)
    for _ in range(3):
        await asyncio.sleep(0)  # both runners parked (nothing queued, no mailbox to read)
    read = anyio.Event()

    async def reader() -> None:
        read.set()
        await anyio.sleep_forever()

    runners[-1].cancel()  # the last to park: the first a wake-up would pick
    scheduler.attach(reader)  # must wake the other runner, not raise
    with anyio.fail_after(5):
        await read.wait()
    for runner in runners:
        runner.cancel()
    await asyncio.gather(*runners, return_exceptions=True)
