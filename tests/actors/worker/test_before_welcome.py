"""An Invoke that reaches a worker session before its Welcome is not run: the orchestrator sent
it before reading the session's Ready (which does not list it), so it sends it again after."""

from __future__ import annotations

import itertools

import anyio
import pytest

from ontoflow.actors.capability import Capability
from ontoflow.actors.worker import WorkerHost
from ontoflow.protocols import CapabilityMetadata
from ontoflow.protocols.messages import Invoke, Outcome, Ready, Welcome
from ontoflow.runtime.transport import open_router, shared_context

pytestmark = pytest.mark.anyio

_names = itertools.count()


class Counter(Capability):
    """Notes the ``n`` of every step it ran."""

    metadata = CapabilityMetadata(id="test.counter", idempotent=False)
    ran: list[int] = []

    async def execute(self, inputs, context):
        Counter.ran.append(inputs["n"])
        return None


def _invoke(attempt: int) -> Invoke:
    return Invoke(run_id="r1", step_id="s1", attempt=attempt, capability="test.counter", inputs={"n": attempt})


async def test_an_invoke_before_the_welcome_is_not_run_and_one_after_it_is() -> None:
    Counter.ran = []
    context = shared_context()
    address = f"inproc://before-welcome-{next(_names)}"
    async with open_router(address, context=context) as router, anyio.create_task_group() as tg:
        host = WorkerHost([Counter()], address=address, context=context, worker_id="w1")
        tg.start_soon(host.run)
        outcomes: list[Outcome] = []
        with anyio.fail_after(10):
            while not outcomes:
                for peer, message in await router.recv_batch():
                    if isinstance(message, Ready):
                        router.send(peer, _invoke(1))  # before the Welcome: in flight before the Ready was read
                        router.send(peer, Welcome(worker_id="w1", heartbeat_ms=40, liveness=50, session="tok"))
                        router.send(peer, _invoke(2))
                    elif isinstance(message, Outcome):
                        outcomes.append(message)
        tg.cancel_scope.cancel()
    assert [(o.attempt, o.session) for o in outcomes] == [(2, "tok")] and Counter.ran == [2]
