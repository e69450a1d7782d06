"""``observe``: a capability's ``perceive()`` polled without anything it does escaping (seed
001's zero-exception guarantee, for perception): what cannot be sent is dropped and logged by
type, never by content."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from ontoflow.actors.capability import Capability, observe
from ontoflow.protocols import CapabilityMetadata
from ontoflow.protocols.messages import Observation

pytestmark = pytest.mark.anyio

SECRET = "card-4111111111111111"
GOOD = Observation(capability="test.eye", kind="seen", id="1", data={"n": 1})


class Eye(Capability):
    metadata = CapabilityMetadata(id="test.eye", perceive_interval_ms=5)

    def __init__(self, perceived: Any) -> None:
        super().__init__()
        self.perceived = perceived

    async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
        return None

    async def perceive(self) -> Any:
        if isinstance(self.perceived, BaseException):
            raise self.perceived
        return self.perceived


BAD = {
    "None": (None, None),
    "a dict": ({"a": SECRET}, "observations_dropped"),
    "a list of dicts": ([{"a": SECRET}, GOOD], "observations_dropped"),
    "unencodable data": ([Observation(capability="test.eye", kind="k", id="2", data={"x": object()}), GOOD],
                         "observations_dropped"),
    "a field of the wrong type": ([Observation(capability="test.eye", kind="k", id=3), GOOD],  # type: ignore[arg-type]
                                  "observations_dropped"),
    "SystemExit": (SystemExit(SECRET), "perceive_failed"),
    "KeyboardInterrupt": (KeyboardInterrupt(SECRET), "perceive_failed"),
    "a CancelledError nobody asked for": (asyncio.CancelledError(SECRET), "perceive_failed"),
    "an error": (RuntimeError(SECRET), "perceive_failed"),
}


@pytest.mark.parametrize(("perceived", "logged"), list(BAD.values()), ids=list(BAD))
async def test_what_cannot_be_sent_is_dropped_and_logged_without_its_content(perceived: Any, logged: str | None) -> None:
    with capture_logs() as logs:
        observations = await observe(Eye(perceived))
    expected = [GOOD] if isinstance(perceived, list) else []
    assert observations == expected
    assert [e["event"] for e in logs] == ([logged] if logged else [])
    assert SECRET not in repr(logs)


async def test_an_observation_too_big_for_a_message_is_dropped() -> None:
    eye = Eye([Observation(capability="test.eye", kind="k", id="big", data={"x": "y" * 500}), GOOD])
    eye.max_result_bytes = 200
    assert await observe(eye) == [GOOD]


async def test_a_tuple_is_a_list() -> None:
    assert await observe(Eye((GOOD,))) == [GOOD]


async def test_a_real_cancellation_propagates() -> None:
    started = anyio.Event()

    class Stares(Eye):
        async def perceive(self) -> Any:
            started.set()
            await anyio.sleep_forever()

    returned: list[Any] = []

    async def run() -> None:
        returned.append(await observe(Stares(None)))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await started.wait()
            tg.cancel_scope.cancel()
    assert returned == []
