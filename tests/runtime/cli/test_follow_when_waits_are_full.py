"""A client waiting on a run is not failed because other clients hold every wait a daemon keeps.

A daemon holds at most ``Waiters.max_clients`` clients' waits (4,096): past it a
``Status(wait=True)`` or ``Watch`` is refused ``too_many_waiting``. One host opening that many
connections, each waiting on any run, made every other client's ``submit --wait``,
``status --wait`` and ``watch`` exit 1 while their runs went on. ``follow`` now asks for the
run's status at each re-ask instead, and returns the run's end (real sockets, a real worker
host and orchestrator in one loop; the daemon's cap is one client here)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
import zmq

from ontoflow.actors.capability import Capability
from ontoflow.actors.orchestrator import compose_orchestrator
from ontoflow.actors.orchestrator._queries import Waiters
from ontoflow.actors.worker import WorkerHost
from ontoflow.protocols import CapabilityMetadata
from ontoflow.protocols.client import (
    Error, RunStatus, Status, Submit, SubmitAccepted, Workers, WorkersInfo, client_to_frames, replies_from_frames
)
from ontoflow.runtime.cli import open_client, request
from ontoflow.runtime.cli._client import follow
from ontoflow.runtime.transport import shared_context

pytestmark = pytest.mark.anyio

GATE_ID = "t.follow.gate"


class Gate(Capability):
    """Ends when the test opens the gate."""

    metadata = CapabilityMetadata(id=GATE_ID, outputs=["t.opened"], timeout_ms=None)
    release: anyio.Event

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        await type(self).release.wait()
        return {"t.opened": True}


class _Spy:
    """The client socket ``follow`` talks through, noting each reply it receives."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.address, self.replies, self.answered = inner, inner.address, [], anyio.Event()

    def send(self, message: Any) -> None:
        self.inner.send(message)

    async def recv_batch(self, max_batch: int) -> list[Any]:
        got = await self.inner.recv_batch(max_batch)
        self.replies += got
        self.answered.set()
        return got


async def test_a_waiting_client_follows_its_run_to_its_end_when_every_wait_is_taken(tmp_path: Any) -> None:
    Gate.release = anyio.Event()
    composed = compose_orchestrator(address=f"ipc://{tmp_path}/d.sock", context=shared_context(), serve_clients=True,
                                    waiters=Waiters(max_clients=1))
    squatter = zmq.Socket(shared_context(), zmq.DEALER)
    squatter.linger = 0
    async with anyio.create_task_group() as tg:
        orch = await tg.start(composed.orchestrator.run)
        await tg.start(WorkerHost([Gate()], address=orch.address, worker_id="w1").run)
        await orch.wait_for_capabilities([GATE_ID])
        try:
            async with open_client(orch.address) as client:
                accepted = await request(client, Submit(manifest={"start": "m", "nodes": {"m": {
                    "entry_block": "g", "blocks": {"g": {"worker": GATE_ID}}}}}))
                assert isinstance(accepted, SubmitAccepted), accepted
                squatter.connect(orch.address)  # another client holds the one wait the daemon keeps
                squatter.send_multipart(client_to_frames(Status(run_id=accepted.run_id, wait=True)))
                squatter.send_multipart(client_to_frames(Workers()))  # answered in order: the wait is held then
                with anyio.fail_after(30):
                    assert isinstance(replies_from_frames(await anyio.to_thread.run_sync(squatter.recv_multipart))[0],
                                      WorkersInfo)
                assert composed.clients is not None and composed.clients.statistics()["clients_waiting"] == 1
                spy = _Spy(client)
                with anyio.fail_after(60):
                    async with anyio.create_task_group() as waiting:
                        ended: list[Any] = []

                        async def wait_for_the_end() -> None:
                            ended.append(await follow(spy, accepted.run_id))  # type: ignore[arg-type]

                        waiting.start_soon(wait_for_the_end)
                        await spy.answered.wait()
                        assert isinstance(spy.replies[0], Error) and spy.replies[0].code == "too_many_waiting"
                        Gate.release.set()
        finally:
            squatter.close()
            tg.cancel_scope.cancel()
    assert isinstance(ended[0], RunStatus) and ended[0].status == "completed", ended
