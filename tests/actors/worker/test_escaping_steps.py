"""A step whose ``invoke`` raises instead of answering fails alone: the runner answers it
``failure`` and serves on (a GeneratorExit raised by a capability, an ``invoke`` overridden
despite ``@final``), and a real worker process survives ``sys.exit`` in ``execute``."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from ontoflow.actors.capability import Capability
from ontoflow.actors.worker._scheduler import StepScheduler
from ontoflow.protocols import CapabilityMetadata
from ontoflow.protocols.messages import Invoke, Outcome
from tests.actors.worker.test_runners import Collector

pytestmark = pytest.mark.anyio


class Closes(Capability):
    """Raises GeneratorExit, at once or after a wait (``test.wait``)."""

    metadata = CapabilityMetadata(
        id="test.closes", timeout_ms=None,
        input_schema={"type": "object", "properties": {"test.wait": {"type": "boolean", "default": False}}},
    )

    async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
        if inputs["test.wait"]:
            await anyio.sleep(0)
        raise GeneratorExit


class Overridden(Capability):
    """An ``invoke`` written over the base's: it raises."""

    metadata = CapabilityMetadata(id="test.overridden", timeout_ms=None)

    async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
        return None

    async def invoke(self, request: Invoke, *, verbose: bool | None = None) -> Outcome:  # type: ignore[misc]
        if request.inputs.get("wait"):
            await anyio.sleep(0)
        raise SystemExit(2) if request.inputs.get("exit") else KeyError("customer acct-4711")


class Fine(Capability):
    metadata = CapabilityMetadata(id="test.fine", timeout_ms=None)

    async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
        return None


@asynccontextmanager
async def _scheduler() -> AsyncIterator[tuple[StepScheduler, Collector]]:
    collector = Collector()
    caps = {"test.closes": Closes(), "test.overridden": Overridden(), "test.fine": Fine()}
    scheduler = StepScheduler(caps, slots=2, answer=collector.answer)
    async with anyio.create_task_group() as tg:
        tg.start_soon(scheduler.run)
        yield scheduler, collector
        tg.cancel_scope.cancel()


def _invoke(step: str, capability: str, **inputs: Any) -> Invoke:
    return Invoke(run_id="r", step_id=step, attempt=1, capability=capability, inputs=inputs)


async def test_a_step_raising_out_of_invoke_fails_alone_and_the_runners_serve_on() -> None:
    async with _scheduler() as (scheduler, collector):
        scheduler.enqueue(_invoke("close-now", "test.closes"))
        scheduler.enqueue(_invoke("close-later", "test.closes", **{"test.wait": True}))
        scheduler.enqueue(_invoke("key", "test.overridden"))
        scheduler.enqueue(_invoke("exit-later", "test.overridden", wait=True, exit=True))
        outcomes = await collector.wait_for(4)
        scheduler.enqueue(_invoke("after", "test.fine"))
        outcomes = await collector.wait_for(5)
    by_step = {o.step_id: o for o in outcomes}
    expected = {"key": "KeyError", "exit-later": "SystemExit"}
    for step in ("close-now", "close-later"):  # the code's own, answered by the base (test_generator_exit_step)
        assert (by_step[step].event, by_step[step].reason, by_step[step].error) == ("failure", "error", "permanent: GeneratorExit: ")
    for step, exc_type in expected.items():
        outcome = by_step[step]
        assert (outcome.event, outcome.reason) == ("failure", "internal"), step
        assert outcome.error == f"unknown: {exc_type}: the capability's invoke raised"
    # A bare number could turn up in a duration float; the marker cannot.
    assert "acct-4711" not in repr(outcomes)
    assert by_step["after"].event == "success"
    assert len(scheduler) == 0 and scheduler.busy == 0


_CAPS = '''
import sys
from ontoflow import Capability, CapabilityMetadata

class Exits(Capability):
    metadata = CapabilityMetadata(id="demo.exits", outputs=["demo.out"])

    async def execute(self, inputs, context):
        sys.exit(4)
'''
_MANIFEST = {"start": "m", "nodes": {"m": {"entry_block": "g", "blocks": {"g": {"worker": "demo.exits"}}}}}


def test_sys_exit_in_execute_fails_the_step_not_the_worker_process(tmp_path: Path) -> None:
    (tmp_path / "caps.py").write_text(_CAPS)
    (tmp_path / "m.json").write_bytes(msgspec.json.encode(_MANIFEST))
    ran = subprocess.run(
        [sys.executable, "-m", "ontoflow", "run", "m.json", "-c", "caps.py", "--no-builtins", "--json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL,
    )
    result = msgspec.json.decode(ran.stdout)
    (step,) = result["trace"]
    # Before: the worker process exited with code 4 and the step was lost with it.
    assert (step["event"], step["reason"]) == ("failure", "error"), step
    assert step["error"] == "permanent: SystemExit: 4"
    assert "process_crashed" not in ran.stderr


class CancelsItsOwnTask(Capability):
    """Calls ``cancel()`` on its own task (a hand-made "abort"): awaiting after it, or not."""

    metadata = CapabilityMetadata(
        id="test.self_cancel", timeout_ms=None,
        input_schema={"type": "object", "properties": {"test.await": {"type": "boolean", "default": True}}},
    )

    async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
        asyncio.current_task().cancel()  # type: ignore[union-attr]
        if inputs["test.await"]:
            await anyio.sleep(0)
        return None


async def test_a_step_cancelling_its_own_task_fails_alone_and_the_runners_serve_on() -> None:
    # Before: the CancelledError left the runner (read as the host being stopped), the step was
    # never answered and its slot never freed; with both runners gone no step ran again.
    collector = Collector()
    caps = {"test.self_cancel": CancelsItsOwnTask(), "test.fine": Fine(), "test.closes": Closes()}
    scheduler = StepScheduler(caps, slots=1, answer=collector.answer)
    async with anyio.create_task_group() as tg:
        tg.start_soon(scheduler.run)
        scheduler.enqueue(_invoke("awaits", "test.self_cancel"))
        scheduler.enqueue(_invoke("returns", "test.self_cancel", **{"test.await": False}))
        scheduler.enqueue(_invoke("after", "test.fine"))
        scheduler.enqueue(_invoke("after-wait", "test.closes", **{"test.wait": True}))  # the runner waits again
        scheduler.enqueue(_invoke("last", "test.fine"))
        with anyio.fail_after(10):
            outcomes = await collector.wait_for(5)
        tg.cancel_scope.cancel()
    by_step = {o.step_id: (o.event, o.reason) for o in outcomes}
    assert by_step["awaits"] == ("failure", "internal")
    assert by_step["after"] == ("success", None) and by_step["last"] == ("success", None)
    assert by_step["returns"] == ("success", None)  # it answered; the cancellation it left is dropped
    assert len(scheduler) == 0 and scheduler.busy == 0


class PlainInvoke(Capability):
    """An ``invoke`` written over the base's as a plain function: it raises when called, or
    returns something that is not a coroutine."""

    metadata = CapabilityMetadata(id="test.plain_invoke", timeout_ms=None)

    async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
        return None

    def invoke(self, request: Invoke, *, verbose: bool | None = None) -> Any:  # type: ignore[misc, override]
        if request.inputs.get("raise"):
            raise RuntimeError("customer acct-4711")
        return Outcome(run_id=request.run_id, step_id=request.step_id, attempt=request.attempt, event="success")


async def test_an_invoke_overridden_as_a_plain_function_fails_its_step_alone() -> None:
    # Before: the RuntimeError, raised before the runner's try, ended the scheduler's task
    # group and with it the host (a worker process died with a traceback quoting the text).
    collector = Collector()
    scheduler = StepScheduler({"test.plain_invoke": PlainInvoke(), "test.fine": Fine()}, slots=1,
                              answer=collector.answer)
    async with anyio.create_task_group() as tg:
        tg.start_soon(scheduler.run)
        scheduler.enqueue(_invoke("raises", "test.plain_invoke", **{"raise": True}))
        scheduler.enqueue(_invoke("raises-too", "test.plain_invoke", **{"raise": True}))
        scheduler.enqueue(_invoke("returns", "test.plain_invoke"))
        scheduler.enqueue(_invoke("after", "test.fine"))
        with anyio.fail_after(10):
            outcomes = await collector.wait_for(4)
        tg.cancel_scope.cancel()
    by_step = {o.step_id: (o.event, o.reason, o.error) for o in outcomes}
    assert by_step["raises"] == ("failure", "internal", "unknown: RuntimeError: the capability's invoke raised")
    assert by_step["returns"] == ("failure", "internal", "unknown: AttributeError: the capability's invoke raised")
    assert by_step["after"] == ("success", None, None)
    assert len(scheduler) == 0 and scheduler.busy == 0
