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


class Unruly(Capability):
    """Each perception returns something a capability author might get wrong, then a good one."""

    metadata = CapabilityMetadata(id="test.unruly", idempotent=True, perceive_interval_ms=5)
    calls = 0

    async def execute(self, inputs, context):
        return None

    async def perceive(self):
        Unruly.calls += 1
        match Unruly.calls:
            case 1:
                return None
            case 2:
                return "not a list"
            case 3:
                return [{"capability": "test.unruly"}, Observation(capability="test.looker", kind="seen", id="forged")]
            case 4:
                return [Observation(capability="test.unruly", kind="seen", id="x" * 10_000),
                        Observation(capability="test.unruly", kind="line\nbreak", id="y")]
        return (Observation(capability="test.unruly", kind="seen", id=f"good-{Unruly.calls}"),)


async def test_what_a_perception_returns_is_checked_before_it_is_sent_and_the_host_survives_it() -> None:
    Unruly.calls = 0
    context = shared_context()
    address = f"inproc://perceive-{next(_names)}"
    async with open_router(address, context=context) as router, anyio.create_task_group() as tg:
        host = WorkerHost([Unruly()], address=address, context=context, worker_id="w1")
        tg.start_soon(host.run)
        seen: list[Observation] = []
        with anyio.fail_after(10):
            while len(seen) < 2:
                for peer, message in await router.recv_batch():
                    if isinstance(message, Ready):
                        router.send(peer, Welcome(worker_id="w1", heartbeat_ms=40, liveness=50, session="tok"))
                    elif isinstance(message, Observation):
                        seen.append(message)
        tg.cancel_scope.cancel()
    # None, a string, a map, another capability's name, a huge id and a control character in
    # a kind were all dropped; the host perceived on and sent only its own good observations.
    assert [o.id for o in seen] == [f"good-{n}" for n in (5, 6)]
    assert all(o.capability == "test.unruly" for o in seen)
