"""A ``GeneratorExit`` the capability's own code raises (``raise GeneratorExit``, an async
generator's ``athrow(GeneratorExit)`` it did not catch) is the step's failure as an exit is
(``SystemExit``, ``KeyboardInterrupt`` raised by code): ``failure``, reason ``error``,
``permanent: GeneratorExit: ...`` (seed 001: the base answers every error, classified; an exit
is permanent). Before, the capability base let it through as if its coroutine were being
closed, and the worker answered the step ``internal``, "the capability's invoke raised", though
the invoke was the base's own. A step whose coroutine really is closed (the host stopping)
still lets the GeneratorExit through: a coroutine may not go on once closed."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from ontoflow.actors.capability import Capability, must_propagate
from ontoflow.actors.worker._scheduler import StepScheduler
from ontoflow.protocols import CapabilityMetadata
from ontoflow.protocols.messages import Invoke
from tests.actors.worker.test_runners import Collector

pytestmark = pytest.mark.anyio


async def _stream():  # an async generator the capability reads from
    yield 1


class RaisesGeneratorExit(Capability):
    metadata = CapabilityMetadata(
        id="test.generator_exit", timeout_ms=None,
        input_schema={"type": "object", "properties": {"test.how": {"type": "string"}}},
    )

    async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
        how = inputs["test.how"]
        if how == "after-wait":
            await anyio.sleep(0)
        if how == "athrow":
            stream = _stream()
            await stream.__anext__()
            await stream.athrow(GeneratorExit("the stream was closed"))  # not caught by it: raised here
        raise GeneratorExit("closed by hand")


class Timed(RaisesGeneratorExit):
    metadata = CapabilityMetadata(id="test.generator_exit_timed", timeout_ms=60_000,
                                  input_schema=RaisesGeneratorExit.metadata.input_schema)


def _invoke(step: str, capability: str, how: str) -> Invoke:
    return Invoke(run_id="r", step_id=step, attempt=1, capability=capability, inputs={"test.how": how})


async def test_a_generator_exit_the_code_raises_is_the_steps_permanent_failure() -> None:
    collector = Collector()
    caps = {"test.generator_exit": RaisesGeneratorExit(), "test.generator_exit_timed": Timed()}
    scheduler = StepScheduler(caps, slots=2, answer=collector.answer)
    async with anyio.create_task_group() as tg:
        tg.start_soon(scheduler.run)
        for capability in caps:  # the base's first attempt without a limit, and its attempts loop
            for how in ("now", "after-wait", "athrow"):
                scheduler.enqueue(_invoke(f"{capability}-{how}", capability, how))
        outcomes = await collector.wait_for(6)
        tg.cancel_scope.cancel()
    for outcome in outcomes:
        message = "the stream was closed" if outcome.step_id.endswith("athrow") else "closed by hand"
        assert (outcome.event, outcome.reason, outcome.error) == (
            "failure", "error", f"permanent: GeneratorExit: {message}"), outcome
    assert len(scheduler) == 0 and scheduler.busy == 0


async def test_a_step_whose_coroutine_is_closed_still_lets_it_through() -> None:
    class Waits(Capability):
        metadata = CapabilityMetadata(id="test.waits", timeout_ms=None)

        async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
            await anyio.sleep_forever()

    coro = Waits().invoke(Invoke(run_id="r", step_id="s", attempt=1, capability="test.waits", inputs={}))
    coro.send(None)  # suspended in execute
    coro.close()  # raised RuntimeError("coroutine ignored GeneratorExit") had the base answered it
    try:
        raise GeneratorExit
    except GeneratorExit as here:  # thrown or raised in the catching frame itself: propagated
        assert must_propagate(here)


class OverriddenInvoke(Capability):
    """An ``invoke`` written over the base's that raises GeneratorExit itself: the guarantee is
    broken, and the runner answers for it (``internal``), as for any exit an invoke lets out."""

    metadata = CapabilityMetadata(id="test.overridden_generator_exit", timeout_ms=None)

    async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
        return None

    async def invoke(self, request: Invoke, *, verbose: bool | None = None) -> Any:  # type: ignore[misc, override]
        if request.inputs.get("wait"):
            await anyio.sleep(0)
        raise GeneratorExit


async def test_an_invoke_of_its_own_raising_generator_exit_is_answered_internal() -> None:
    collector = Collector()
    scheduler = StepScheduler({"test.overridden_generator_exit": OverriddenInvoke()}, slots=1, answer=collector.answer)
    async with anyio.create_task_group() as tg:
        tg.start_soon(scheduler.run)
        scheduler.enqueue(Invoke(run_id="r", step_id="now", attempt=1, capability="test.overridden_generator_exit"))
        scheduler.enqueue(Invoke(run_id="r", step_id="later", attempt=1, capability="test.overridden_generator_exit",
                                 inputs={"wait": True}))
        outcomes = await collector.wait_for(2)
        tg.cancel_scope.cancel()
    assert {(o.step_id, o.event, o.reason, o.error) for o in outcomes} == {
        (step, "failure", "internal", "unknown: GeneratorExit: the capability's invoke raised") for step in ("now", "later")}
