"""How long the heartbeat thread covers a blocked event loop is the allowance of the steps in
flight (``_stall_allowance``), not of every capability the host carries. Before, a host with
one slow capability (a minute) and a fast one (a second) covered a fast step's stall for the
slow one's minute: a worker hung in a fast step kept its steps that long. The scheduler tells
the allowance of every step's start and end, whatever the end (an answer, an error, a Cancel)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from ontoflow.actors.capability import Capability, Result
from ontoflow.actors.worker._scheduler import StepScheduler
from ontoflow.actors.worker._stall_allowance import StallAllowance
from ontoflow.actors.worker._stall_beats import StallBeats
from ontoflow.protocols import CapabilityMetadata, RetryPolicy
from ontoflow.protocols.context import StepContext, SystemMetadata
from ontoflow.protocols.messages import Invoke, Outcome

pytestmark = pytest.mark.anyio

#: What each step saw as the allowance while it ran (its first slice: where a step blocks).
SEEN: dict[str, float] = {}
STALL: list[StallAllowance] = []
RELEASE: list[anyio.Event] = []


class Quick(Capability):
    metadata = CapabilityMetadata(id="test.quick", timeout_ms=1_000, retry=RetryPolicy(max_retries=0))

    async def execute(self, inputs, context):
        SEEN[context.system.step_id] = STALL[0].ms
        if inputs.get("test.raise"):
            raise ValueError("broken")
        return Result(event="success")


class Patient(Capability):
    metadata = CapabilityMetadata(id="test.patient", timeout_ms=60_000)

    async def execute(self, inputs, context):
        SEEN[context.system.step_id] = STALL[0].ms
        await RELEASE[0].wait()
        return Result(event="success")


class Untimed(Patient):
    metadata = CapabilityMetadata(id="test.untimed", timeout_ms=None)


def _invoke(step: str, capability: str, **inputs: object) -> Invoke:
    context = StepContext(system=SystemMetadata(run_id="r", node="n", block="b", step_id=step))
    return Invoke(run_id="r", step_id=step, attempt=1, capability=capability, inputs=dict(inputs), context=context)


@asynccontextmanager
async def _host(max_stall_s: float = 300.0) -> AsyncIterator[tuple[StepScheduler, list[Outcome], StallAllowance]]:
    capabilities = {c.metadata.id: c for c in (Quick(), Patient(), Untimed())}
    stall = StallAllowance.of(capabilities, max_stall_s)
    SEEN.clear()
    STALL[:], RELEASE[:] = [stall], [anyio.Event()]
    outcomes: list[Outcome] = []
    scheduler = StepScheduler(capabilities, slots=4, answer=outcomes.append, stall=stall)
    async with anyio.create_task_group() as tg:
        tg.start_soon(scheduler.run)
        yield scheduler, outcomes, stall
        tg.cancel_scope.cancel()


async def _until(condition) -> None:
    with anyio.fail_after(5):
        while not condition():
            await anyio.sleep(0)


async def test_a_fast_step_is_covered_for_its_own_allowance_not_the_slowest_capabilitys() -> None:
    async with _host() as (scheduler, outcomes, stall):
        beats = StallBeats("w1", address="inproc://unused", context=None, curve=None, allowance=stall, clock=lambda: 0)
        assert beats.allowance_ms == 1_000  # nothing runs: the host's own work never blocks longer
        scheduler.enqueue(_invoke("fast", "test.quick"))
        await _until(lambda: len(outcomes) == 1)
        assert SEEN["fast"] == 2_000  # its timeout and the grace: not the patient one's minute
        assert beats.allowance_ms == 1_000  # over: back to nothing running
        scheduler.enqueue(_invoke("slow", "test.patient"))
        await _until(lambda: "slow" in SEEN)
        assert stall.ms == 61_000 and stall.running() == {"test.patient": 1}
        scheduler.enqueue(_invoke("fast2", "test.quick"))
        await _until(lambda: len(outcomes) == 2)
        assert SEEN["fast2"] == 61_000  # the longest of the steps in flight
        assert stall.ms == 61_000  # the fast one's end does not lower it while the slow one runs
        RELEASE[0].set()
        await _until(lambda: len(outcomes) == 3)
        assert stall.ms == 1_000 and stall.running() == {}


async def test_a_step_that_fails_or_is_cancelled_no_longer_counts() -> None:
    async with _host() as (scheduler, outcomes, stall):
        scheduler.enqueue(_invoke("broken", "test.quick", **{"test.raise": True}))
        await _until(lambda: len(outcomes) == 1)
        assert outcomes[0].event == "failure" and stall.ms == 1_000
        scheduler.enqueue(_invoke("waits", "test.untimed"))
        await _until(lambda: "waits" in SEEN)
        assert stall.ms == 300_000  # no timeout declared: all of max_stall_s
        scheduler.cancel(("r", "waits", 1), 0)
        await _until(lambda: len(outcomes) == 2)
        assert outcomes[1].event == "cancelled" and stall.ms == 1_000 and stall.running() == {}


async def test_every_allowance_is_held_to_max_stall_s() -> None:
    async with _host(max_stall_s=5.0) as (scheduler, outcomes, stall):
        scheduler.enqueue(_invoke("slow", "test.patient"))
        scheduler.enqueue(_invoke("waits", "test.untimed"))
        await _until(lambda: len(SEEN) == 2)
        assert stall.ms == 5_000
        RELEASE[0].set()
        await _until(lambda: len(outcomes) == 2)
    assert StallAllowance.of({}, 0.5).ms == 500  # the idle grace too, under a max_stall_s below it


def test_the_allowance_falls_to_the_longest_of_the_steps_left() -> None:
    stall = StallAllowance({"fast": 2_000.0, "slow": 61_000.0}, 1_000.0)
    stall.enter("fast")
    stall.enter("slow")
    stall.enter("slow")
    stall.leave("slow")
    assert stall.ms == 61_000  # one of them still runs
    stall.leave("slow")
    assert stall.ms == 2_000 and stall.running() == {"fast": 1}
    stall.enter("unknown")  # not hosted (never run): the grace only
    stall.leave("fast")
    assert stall.ms == 1_000
    stall.leave("unknown")
    assert stall.ms == 1_000 and stall.running() == {}
