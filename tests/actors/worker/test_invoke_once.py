"""A worker host never runs one attempt twice: a copy of an Invoke that arrives after the attempt
was answered (a confused or replaying orchestrator) is not run again, whether the step answered
at once or waited first. Before, only a copy arriving while the attempt was queued or running
was caught; once answered, the copy ran the capability again (a payment made twice)."""

from __future__ import annotations

import itertools
from typing import Any

import anyio
import pytest

from ontoflow.actors.capability import Capability
from ontoflow.actors.worker import WorkerHost
from ontoflow.protocols import CapabilityMetadata
from ontoflow.protocols.messages import Invoke, Outcome, Ready, Welcome
from ontoflow.runtime.transport import open_router, shared_context

pytestmark = pytest.mark.anyio

_names = itertools.count()


class Pay(Capability):
    """Notes every step it runs; ``wait``: waits once first."""

    metadata = CapabilityMetadata(id="test.pay", idempotent=False)
    ran: list[str] = []

    async def execute(self, inputs: dict[str, Any], context: Any) -> None:
        if inputs.get("wait"):
            await anyio.sleep(0)
        Pay.ran.append(inputs["step"])


def _invoke(step: str, wait: bool = False) -> Invoke:
    return Invoke(run_id="r1", step_id=step, attempt=1, capability="test.pay", inputs={"step": step, "wait": wait})


async def test_a_copy_of_an_answered_attempt_is_not_run_again() -> None:
    Pay.ran = []
    context = shared_context()
    address = f"inproc://once-{next(_names)}"
    answered: list[str] = []
    async with open_router(address, context=context) as router, anyio.create_task_group() as tg:
        host = WorkerHost([Pay()], address=address, context=context, worker_id="w1")
        tg.start_soon(host.run)
        with anyio.fail_after(15):
            while "last" not in answered:
                for peer, message in await router.recv_batch():
                    if isinstance(message, Ready):
                        router.send(peer, Welcome(worker_id="w1", heartbeat_ms=1000, liveness=50, session="tok"))
                        router.send(peer, _invoke("inline"))
                        router.send(peer, _invoke("waits", wait=True))
                    elif isinstance(message, Outcome):
                        answered.append(message.step_id)
                        if answered == ["inline", "waits"]:  # both answered: their copies, then one more step
                            router.send(peer, _invoke("inline"))
                            router.send(peer, _invoke("waits", wait=True))
                            router.send(peer, _invoke("last"))
        tg.cancel_scope.cancel()
    assert Pay.ran == ["inline", "waits", "last"]
    assert answered == ["inline", "waits", "last"]
