"""A Welcome announcing a message size limit too small to carry an answer (``max_message_bytes``
of 1: a confused or hostile orchestrator) is refused like one with a heartbeat below 1 ms
(``welcome_invalid``), and the session waits for a sound one. Before, the worker registered
under it and went mute: every Heartbeat and every answer was withheld as too large, its steps
ran and were never answered."""

from __future__ import annotations

import itertools

import anyio
import pytest
from structlog.testing import capture_logs

from ontoflow.actors.capability import Capability
from ontoflow.actors.worker import WorkerHost
from ontoflow.protocols import CapabilityMetadata
from ontoflow.protocols.messages import Invoke, Outcome, Ready, Welcome
from ontoflow.runtime.transport import open_router, shared_context

pytestmark = pytest.mark.anyio

_names = itertools.count()


class Echo(Capability):
    metadata = CapabilityMetadata(id="test.echo")

    async def execute(self, inputs, context):
        return None


async def test_a_welcome_whose_limit_carries_no_answer_is_refused_and_a_sound_one_taken() -> None:
    context = shared_context()
    address = f"inproc://welcome-{next(_names)}"
    answered: list[Outcome] = []
    with capture_logs() as logs:
        async with open_router(address, context=context) as router, anyio.create_task_group() as tg:
            tg.start_soon(WorkerHost([Echo()], address=address, context=context, worker_id="w1").run)
            with anyio.fail_after(15):
                while not answered:
                    for peer, message in await router.recv_batch():
                        if isinstance(message, Ready):
                            router.send(peer, Welcome(worker_id="w1", heartbeat_ms=1000, liveness=50, session="a",
                                                      max_message_bytes=1))
                            router.send(peer, Welcome(worker_id="w1", heartbeat_ms=1000, liveness=50, session="b"))
                            router.send(peer, Invoke("r", "s", 1, "test.echo"))
                        elif isinstance(message, Outcome):
                            answered.append(message)
            tg.cancel_scope.cancel()
    events = [entry["event"] for entry in logs if entry["event"] in ("welcome_invalid", "worker_registered")]
    assert events == ["welcome_invalid", "worker_registered"]
    assert (answered[0].event, answered[0].session) == ("success", "b")
