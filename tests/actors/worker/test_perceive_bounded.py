"""A perception that never returns is cancelled after the capability's ``timeout_ms`` and polled
again at the next interval: before, the host waited on it for ever, and that capability never
perceived again, without a word."""

from __future__ import annotations

import itertools
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from ontoflow.actors.capability import Capability
from ontoflow.actors.worker import WorkerHost
from ontoflow.protocols import CapabilityMetadata
from ontoflow.protocols.messages import Observation, Ready, Welcome
from ontoflow.runtime.transport import open_router, shared_context

pytestmark = pytest.mark.anyio

_names = itertools.count()


class HangsOnce(Capability):
    """Its first poll waits for ever (a long poll without a timeout); the next one perceives."""

    metadata = CapabilityMetadata(id="test.hangs_once", perceive_interval_ms=1, timeout_ms=50)
    calls = 0

    async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
        return None

    async def perceive(self) -> Any:
        HangsOnce.calls += 1
        if HangsOnce.calls == 1:
            await anyio.sleep_forever()
        return [Observation(capability="test.hangs_once", kind="seen", id=str(HangsOnce.calls))]


async def test_a_perception_that_hangs_is_given_up_and_the_next_poll_perceives() -> None:
    HangsOnce.calls = 0
    context = shared_context()
    address = f"inproc://perceive-bounded-{next(_names)}"
    with capture_logs() as logs:
        async with open_router(address, context=context) as router, anyio.create_task_group() as tg:
            host = WorkerHost([HangsOnce()], address=address, context=context, worker_id="w1")
            tg.start_soon(host.run)
            seen: list[Observation] = []
            with anyio.fail_after(10):  # before: no Observation ever came
                while not seen:
                    for peer, message in await router.recv_batch():
                        if isinstance(message, Ready):
                            router.send(peer, Welcome(worker_id="w1", heartbeat_ms=40, liveness=50, session="tok"))
                        elif isinstance(message, Observation):
                            seen.append(message)
            tg.cancel_scope.cancel()
    assert seen[0].id == "2"
    timed_out = [e for e in logs if e["event"] == "perceive_timed_out"]
    assert [(e["capability"], e["timeout_ms"]) for e in timed_out] == [("test.hangs_once", 50)]
