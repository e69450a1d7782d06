"""A worker host whose capability perceives badly (None, dicts, unencodable data, sys.exit)
keeps serving: before, each of these ended the host's task group, and the worker process."""

from __future__ import annotations

import itertools
import sys
from typing import Any

import anyio
import pytest

from ontoflow.actors.capability import Capability
from ontoflow.actors.worker import WorkerHost
from ontoflow.protocols import CapabilityMetadata
from ontoflow.protocols.messages import Observation, Ready, Welcome
from ontoflow.runtime.transport import open_router, shared_context

pytestmark = pytest.mark.anyio

_names = itertools.count()


class Clumsy(Capability):
    """Perceives wrongly in every way first, then one good Observation."""

    metadata = CapabilityMetadata(id="test.clumsy", perceive_interval_ms=1)
    calls = 0

    async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
        return None

    async def perceive(self) -> Any:
        Clumsy.calls += 1
        match Clumsy.calls:
            case 1:
                return None
            case 2:
                return [{"kind": "seen"}]
            case 3:
                return [Observation(capability="test.clumsy", kind="seen", id="bad", data={"x": {1, object()}})]
            case 4:
                sys.exit(2)
        return [Observation(capability="test.clumsy", kind="seen", id=str(Clumsy.calls))]


async def test_a_host_survives_every_bad_perception_and_sends_the_good_one() -> None:
    Clumsy.calls = 0
    context = shared_context()
    address = f"inproc://perceive-hostile-{next(_names)}"
    async with open_router(address, context=context) as router, anyio.create_task_group() as tg:
        host = WorkerHost([Clumsy()], address=address, context=context, worker_id="w1")
        tg.start_soon(host.run)
        seen: list[Observation] = []
        with anyio.fail_after(10):
            while not seen:
                for peer, message in await router.recv_batch():
                    if isinstance(message, Ready):
                        router.send(peer, Welcome(worker_id="w1", heartbeat_ms=40, liveness=50, session="tok"))
                    elif isinstance(message, Observation):
                        seen.append(message)
        tg.cancel_scope.cancel()
    assert int(seen[0].id) >= 5 and seen[0].session == "tok"  # the bad ones sent nothing
