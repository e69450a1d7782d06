"""What a welcomed worker host does with an Invoke it cannot run: one for a capability it
does not host is answered ``unavailable`` (``not_hosted``); a second copy of an attempt it
runs is not run again."""

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


class Held(Capability):
    """Waits for ``release``; notes the attempts it ran."""

    metadata = CapabilityMetadata(id="test.held", idempotent=False)
    ran: list[int] = []
    release: anyio.Event

    async def execute(self, inputs, context):
        Held.ran.append(inputs["n"])
        await Held.release.wait()
        return None


def _invoke(attempt: int, capability: str = "test.held") -> Invoke:
    return Invoke(run_id="r1", step_id="s1", attempt=attempt, capability=capability, inputs={"n": attempt})


async def test_an_unhosted_capability_is_answered_and_a_copy_of_a_running_attempt_is_not_run_again() -> None:
    Held.ran, Held.release = [], anyio.Event()
    context = shared_context()
    address = f"inproc://refusals-{next(_names)}"
    async with open_router(address, context=context) as router, anyio.create_task_group() as tg:
        host = WorkerHost([Held()], address=address, context=context, worker_id="w1")
        tg.start_soon(host.run)
        outcomes: list[Outcome] = []
        with anyio.fail_after(10):
            while len(outcomes) < 2:
                for peer, message in await router.recv_batch():
                    if isinstance(message, Ready):
                        router.send(peer, Welcome(worker_id="w1", heartbeat_ms=40, liveness=50, session="tok"))
                        router.send(peer, _invoke(1))
                        router.send(peer, _invoke(1))  # the same attempt again, while it runs
                        router.send(peer, _invoke(2, "test.elsewhere"))
                    elif isinstance(message, Outcome):
                        outcomes.append(message)
                        if message.attempt == 2:
                            Held.release.set()
        tg.cancel_scope.cancel()
    refused, done = sorted(outcomes, key=lambda o: -o.attempt)
    assert (refused.attempt, refused.event, refused.reason, refused.session) == (2, "unavailable", "not_hosted", "tok")
    assert refused.error is not None and "'test.elsewhere'" in refused.error
    assert (done.attempt, done.event) == (1, "success")
    assert Held.ran == [1]
