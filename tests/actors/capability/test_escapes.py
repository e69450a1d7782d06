"""What ``execute`` can raise besides an ``Exception`` (seed 001's zero-exception guarantee):
an exit, an interrupt, a ``CancelledError`` nobody asked for, a bare ``BaseException``. Each
ends the step in a failure Outcome (never retried, nothing quoted); only a real cancellation of
the calling task propagates."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from ontoflow.actors.capability import Capability, ErrorClass, classify_error
from ontoflow.protocols.capability import RetryPolicy
from ontoflow.protocols.context import StepContext
from ontoflow.protocols.messages import Outcome
from tests.actors.capability._support import make_metadata, make_request
from tests.actors.capability.test_invoke import scripted

pytestmark = pytest.mark.anyio

EMAIL = "alice@example.com"


class Custom(BaseException):
    pass


ESCAPES = {
    "SystemExit": SystemExit(4),
    "KeyboardInterrupt": KeyboardInterrupt(f"interrupted while mailing {EMAIL}"),
    "CancelledError": asyncio.CancelledError(f"cancelled {EMAIL}"),
    "Custom": Custom(f"timeout talking to {EMAIL}"),  # the text would say transient: not for an exit
}


@pytest.mark.parametrize("timeout_ms", [None, 5_000], ids=["no limit", "with a limit"])
@pytest.mark.parametrize("name", list(ESCAPES))
async def test_a_base_exception_from_execute_ends_in_a_failure_not_retried(name: str, timeout_ms: int | None) -> None:
    cap, sleep = scripted([ESCAPES[name]], timeout_ms=timeout_ms, retry=RetryPolicy(max_retries=3))
    with capture_logs() as logs, anyio.fail_after(5):
        outcome = await cap.invoke(make_request({"customer.email": EMAIL}))
    assert isinstance(outcome, Outcome)
    assert (outcome.event, outcome.reason, outcome.retries) == ("failure", "error", 0)
    assert outcome.error is not None and outcome.error.startswith(f"permanent: {name}")
    assert cap.calls == 1 and sleep.delays == []
    assert EMAIL not in outcome.error and EMAIL not in repr(logs)


def test_an_exit_or_interrupt_is_classified_permanent() -> None:
    for exc in (SystemExit(1), KeyboardInterrupt("timeout"), Custom("503 rate limit")):
        assert classify_error(exc) is ErrorClass.PERMANENT


class SysExit(Capability):
    """A capability that calls ``sys.exit`` (a library doing so on a fatal error)."""

    metadata = make_metadata(timeout_ms=None)

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Any:
        await anyio.sleep(0)
        sys.exit(3)


async def test_sys_exit_after_a_wait_ends_in_a_failure() -> None:
    with anyio.fail_after(5):
        outcome = await SysExit().invoke(make_request())
    assert (outcome.event, outcome.reason) == ("failure", "error")
    assert outcome.error == "permanent: SystemExit: 3"


async def test_a_real_cancellation_still_propagates_from_the_fast_path() -> None:
    # The same CancelledError class, but the task was asked to stop: it must not become a failure.
    started = anyio.Event()

    class Waits(Capability):
        metadata = make_metadata(timeout_ms=None)

        async def execute(self, inputs: dict[str, Any], context: StepContext) -> Any:
            started.set()
            await anyio.sleep_forever()

    returned: list[Outcome] = []

    async def run() -> None:
        returned.append(await Waits().invoke(make_request()))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await started.wait()
            tg.cancel_scope.cancel()
    assert returned == []
