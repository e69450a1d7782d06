"""A person's stop signal raised where a step's code stood (``runtime.errors.Interrupted``: a
second Ctrl-C while the step blocks the loop) is let through by the capability base and by the
worker's step scheduler, so the person gets out; a ``KeyboardInterrupt`` the capability raises
itself still fails its step alone. Before, the base's ``BaseException`` catch made the person's
Ctrl-C the step's failure, and the run went on."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from ontoflow.actors.capability import Capability, must_propagate
from ontoflow.actors.worker._scheduler import StepScheduler
from ontoflow.protocols.capability import RetryPolicy
from ontoflow.protocols.messages import Invoke, Outcome
from ontoflow.runtime.errors import Interrupted
from tests.actors.capability._support import make_metadata, make_request

pytestmark = pytest.mark.anyio


def _raising(exc: BaseException, *, timeout_ms: int | None) -> Capability:
    class Raises(Capability):
        metadata = make_metadata(timeout_ms=timeout_ms, retry=RetryPolicy(max_retries=2))

        async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
            raise exc

    return Raises()


async def test_only_a_signal_s_interrupt_must_propagate() -> None:
    assert must_propagate(Interrupted()) and not must_propagate(KeyboardInterrupt())


@pytest.mark.parametrize("timeout_ms", [None, 5_000], ids=["no limit", "with a limit"])
async def test_the_base_lets_a_persons_interrupt_through(timeout_ms: int | None) -> None:
    with anyio.fail_after(5), pytest.raises(Interrupted):
        await _raising(Interrupted(), timeout_ms=timeout_ms).invoke(make_request())


async def test_a_keyboard_interrupt_raised_by_code_still_fails_its_step() -> None:
    with anyio.fail_after(5):
        outcome = await _raising(KeyboardInterrupt(), timeout_ms=None).invoke(make_request())
    assert (outcome.event, outcome.reason) == ("failure", "error")


async def test_the_step_scheduler_lets_it_through_too() -> None:
    answered: list[Outcome] = []
    cap = _raising(Interrupted(), timeout_ms=None)
    scheduler = StepScheduler({"test.capability.sample": cap}, slots=1, answer=answered.append)
    scheduler.enqueue(Invoke(run_id="r", step_id="s", attempt=1, capability="test.capability.sample", inputs={}))
    with anyio.fail_after(5), pytest.raises(Interrupted):
        await scheduler.runner()
    assert answered == []
