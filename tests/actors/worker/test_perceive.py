"""A perceiving capability on the worker host: perceptions started by the host's Ticks, their
Observations sent with the session token once welcomed, and a failing perception survived."""

from __future__ import annotations

import itertools

import anyio
import pytest

from ontoflow.actors.capability import Capability
from ontoflow.actors.worker import WorkerHost
from ontoflow.protocols import CapabilityMetadata
from ontoflow.protocols.messages import PROTOCOL_VERSION, Observation, Ready, Welcome
from ontoflow.runtime.transport import open_router, shared_context

pytestmark = pytest.mark.anyio

_names = itertools.count()


class Looker(Capability):
    """Perceives one numbered observation per call; the second call fails."""

    metadata = CapabilityMetadata(id="test.looker", idempotent=True, perceive_interval_ms=5)
    calls = 0

    async def execute(self, inputs, context):
        return None

    async def perceive(self) -> list[Observation]:
        Looker.calls += 1
        if Looker.calls == 2:
            raise RuntimeError("a flaky sensor")
        return [Observation(capability="test.looker", kind="seen", id=str(Looker.calls))]


async def test_perceptions_are_started_by_ticks_and_reach_the_orchestrator_with_the_token() -> None:
    Looker.calls = 0
    context = shared_context()
    address = f"inproc://perceive-{next(_names)}"
    async with open_router(address, context=context) as router, anyio.create_task_group() as tg:
        host = WorkerHost([Looker()], address=address, context=context, worker_id="w1")
        tg.start_soon(host.run)
        seen: list[Observation] = []
        with anyio.fail_after(10):
            while len(seen) < 2:
                for peer, message in await router.recv_batch():
                    if isinstance(message, Ready):
                        assert message.protocol == PROTOCOL_VERSION
                        router.send(peer, Welcome(worker_id="w1", heartbeat_ms=40, liveness=50, session="tok"))
                    elif isinstance(message, Observation):
                        seen.append(message)
        tg.cancel_scope.cancel()
    # The one that failed is skipped; the host perceives on.
    assert all(o.session == "tok" for o in seen) and "2" not in [o.id for o in seen]
    assert Looker.calls >= 3
