"""Garbage on the orchestrator's socket is logged and dropped while a run goes on."""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
import pytest
import structlog
import zmq
import zmq.asyncio

from ontoflow.actors.capability import Capability
from ontoflow.actors.orchestrator import Orchestrator
from ontoflow.actors.orchestrator.engine import compile_workflow
from ontoflow.actors.worker import WorkerHost
from ontoflow.protocols import CapabilityMetadata, Disconnect, Ready, manifest_from_data
from ontoflow.runtime.codec import HEADER, from_frames, to_frames
from ontoflow.runtime.transport import shared_context

pytestmark = pytest.mark.anyio

GATE_ID = "test.capability.gate"


class Gate(Capability):
    """Waits until the test opens the gate, so the run is surely in flight meanwhile."""

    metadata = CapabilityMetadata(id=GATE_ID, outputs=["test.passed"], timeout_ms=None)
    entered: anyio.Event
    release: anyio.Event

    async def execute(self, inputs, context):
        type(self).entered.set()
        await type(self).release.wait()
        return {"test.passed": True}


MANIFEST = {"start": "m", "nodes": {"m": {"entry_block": "g", "blocks": {"g": {"worker": GATE_ID}}}}}


@pytest.mark.parametrize("scheme", ["ipc", "tcp"])
async def test_garbage_and_wrong_protocol_do_not_disturb_a_run(tmp_path: Path, scheme: str) -> None:
    Gate.entered, Gate.release = anyio.Event(), anyio.Event()
    bind = f"ipc://{tmp_path}/o.sock" if scheme == "ipc" else "tcp://127.0.0.1:0"
    workflow = compile_workflow(manifest_from_data(MANIFEST), {GATE_ID: Gate.metadata})
    with structlog.testing.capture_logs() as logs:
        async with anyio.create_task_group() as tg:
            orch = await tg.start(Orchestrator(address=bind, context=shared_context()).run)
            await tg.start(WorkerHost([Gate()], address=orch.address, worker_id="w1").run)
            await orch.wait_for_capabilities([GATE_ID])
            run_id = orch.submit(workflow, {})
            with anyio.fail_after(10):
                await Gate.entered.wait()

            ctx = zmq.asyncio.Context()
            raw = ctx.socket(zmq.DEALER)
            raw.linger = 0
            raw.connect(orch.address)
            try:
                await raw.send_multipart([b"not ours"])
                await raw.send_multipart([HEADER, b"\xc1\xc1 not msgpack"])
                await raw.send_multipart([HEADER, msgspec.msgpack.encode(["ready", "wrong shape"])])
                await raw.send_multipart([b"a", b"b", b"c"])
                # A batch inside a batch is not a valid message either.
                await raw.send_multipart([HEADER, msgspec.msgpack.encode(["batch", [["batch", []]]])])
                await raw.send_multipart(to_frames(Ready(protocol=99, worker_id="intruder")))
                with anyio.fail_after(10):
                    [reply] = from_frames(await raw.recv_multipart())
            finally:
                raw.close()
                ctx.term()
            assert isinstance(reply, Disconnect) and "99" in reply.reason

            Gate.release.set()
            with anyio.fail_after(10):
                result = await orch.result(run_id)
            tg.cancel_scope.cancel()
    assert result.status == "completed"
    assert result.context["test.passed"] is True
    dropped = [e for e in logs if e["event"] == "frame_dropped"]
    assert len(dropped) == 5
    assert any(e["event"] == "worker_refused" and e.get("worker_id") == "intruder" for e in logs)
    assert "intruder" not in {w.worker_id for w in orch.registry}
