"""A confused orchestrator that floods its worker with messages no worker takes (Outcomes,
Readys) writes a few log lines, not one each: ``message_unexpected`` at the 1st, 2nd, 4th...
of each type, with the count. The worker goes on serving."""

from __future__ import annotations

import anyio
import pytest
from structlog.testing import capture_logs

from ontoflow.actors.capability import Capability
from ontoflow.actors.worker import WorkerHost
from ontoflow.protocols import CapabilityMetadata
from ontoflow.protocols.messages import PROTOCOL_VERSION, Invoke, Outcome, Ready, Welcome
from ontoflow.runtime.transport import open_router, shared_context

pytestmark = pytest.mark.anyio

_FLOOD = 300


class Echo(Capability):
    metadata = CapabilityMetadata(id="test.echo")

    async def execute(self, inputs, context):
        return None


async def test_a_flood_of_unexpected_messages_writes_a_few_lines_with_the_count() -> None:
    context = shared_context()
    address = "inproc://unexpected-flood"
    answered: list[Outcome] = []
    with capture_logs() as logs:
        async with open_router(address, context=context) as router, anyio.create_task_group() as tg:
            tg.start_soon(WorkerHost([Echo()], address=address, context=context, worker_id="w1").run)
            with anyio.fail_after(15):
                while not answered:
                    for peer, message in await router.recv_batch():
                        if isinstance(message, Ready):
                            router.send(peer, Welcome(worker_id="w1", heartbeat_ms=1000, liveness=50, session="b"))
                            for i in range(_FLOOD):
                                router.send(peer, Outcome(run_id="r", step_id=str(i), attempt=1, event="success"))
                                router.send(peer, Ready(protocol=PROTOCOL_VERSION, worker_id="w2"))
                            router.send(peer, Invoke("r", "s", 1, "test.echo"))
                        elif isinstance(message, Outcome):
                            answered.append(message)
            tg.cancel_scope.cancel()
    lines = [e for e in logs if e["event"] == "message_unexpected"]
    assert len(lines) == 18  # 1, 2, 4... 256 of each type; before: 600
    assert {(e["op"], e["count"]) for e in lines if e["count"] == 256} == {("Outcome", 256), ("Ready", 256)}
    assert answered[0].event == "success"
