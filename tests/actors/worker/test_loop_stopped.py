"""A capability that stops the event loop (``asyncio.get_running_loop().stop()``) does not end
its worker: ``run_guarded`` runs the loop again (``event_loop_stopped``) and the steps go on.
Before, ``RuntimeError: Event loop stopped before Future completed`` left the worker process,
every step in it lost. Plain asyncio and uvloop."""

from __future__ import annotations

import asyncio

import anyio
import pytest
from structlog.testing import capture_logs

from ontoflow.actors.capability import Capability
from ontoflow.actors.worker import WorkerHost, run_guarded
from ontoflow.protocols import CapabilityMetadata
from ontoflow.protocols.messages import Invoke, Outcome, Ready, Welcome
from ontoflow.runtime.transport import open_router, shared_context


class StopsTheLoop(Capability):
    metadata = CapabilityMetadata(id="t.stops")

    async def execute(self, inputs, context):
        if inputs.get("stop"):
            asyncio.get_running_loop().stop()


async def _serve(address: str) -> list[tuple[str, str]]:
    context = shared_context()
    answered: list[tuple[str, str]] = []
    async with open_router(address, context=context) as router, anyio.create_task_group() as tg:
        tg.start_soon(WorkerHost([StopsTheLoop()], address=address, context=context, worker_id="w1").run)
        with anyio.fail_after(15):
            while len(answered) < 2:
                for peer, message in await router.recv_batch():
                    if isinstance(message, Ready):
                        router.send(peer, Welcome(worker_id="w1", heartbeat_ms=1000, liveness=50, session="b"))
                        router.send(peer, Invoke("r", "s1", 1, "t.stops", {"stop": True}))
                        router.send(peer, Invoke("r", "s2", 1, "t.stops"))
                    elif isinstance(message, Outcome):
                        answered.append((message.step_id, message.event))
        tg.cancel_scope.cancel()
    return answered


@pytest.mark.parametrize("uvloop", [False, True])
def test_a_capability_stopping_the_event_loop_does_not_end_its_worker(uvloop: bool) -> None:
    with capture_logs() as logs:
        answered = run_guarded(_serve, f"inproc://loop-stopped-{uvloop}", use_uvloop=uvloop)
    assert sorted(answered) == [("s1", "success"), ("s2", "success")]
    assert [e for e in logs if e["event"] == "event_loop_stopped"]
