"""A Welcome announcing an absurd heartbeat interval (``10**12`` ms) or liveness is refused
(``welcome_invalid``) as one below 1 ms is, and the session waits for a sound one. Before, the
worker registered under it: the answers it sent were kept for ever (the answer book's prune
horizon lay 30,000 years back) and a daemon gone silent was never noticed. A sound Welcome
with a long window keeps answers at most ``MAX_SEEN_WINDOW_MS``, as accepted attempts are."""

from __future__ import annotations

import itertools

import anyio
import pytest
from structlog.testing import capture_logs

from ontoflow.actors.capability import Capability
from ontoflow.actors.worker import WorkerHost
from ontoflow.actors.worker._scheduler import MAX_SEEN_WINDOW_MS
from ontoflow.actors.worker._welcome import held_window_ms
from ontoflow.protocols import CapabilityMetadata
from ontoflow.protocols.messages import Invoke, Outcome, Ready, Welcome
from ontoflow.runtime.transport import open_router, shared_context

pytestmark = pytest.mark.anyio

_names = itertools.count()


class Echo(Capability):
    metadata = CapabilityMetadata(id="test.echo")

    async def execute(self, inputs, context):
        return None


@pytest.mark.parametrize(("heartbeat_ms", "liveness"), [(10**12, 3), (1000, 10**9), (0, 3), (-5, 3)])
async def test_a_welcome_with_an_absurd_heartbeat_is_refused_and_a_sound_one_taken(heartbeat_ms: int, liveness: int) -> None:
    context = shared_context()
    address = f"inproc://welcome-absurd-{next(_names)}"
    answered: list[Outcome] = []
    with capture_logs() as logs:
        async with open_router(address, context=context) as router, anyio.create_task_group() as tg:
            host = WorkerHost([Echo()], address=address, context=context, worker_id="w1")
            tg.start_soon(host.run)
            with anyio.fail_after(15):
                while not answered:
                    for peer, message in await router.recv_batch():
                        if isinstance(message, Ready):
                            router.send(peer, Welcome(worker_id="w1", heartbeat_ms=heartbeat_ms, liveness=liveness, session="a"))
                            router.send(peer, Welcome(worker_id="w1", heartbeat_ms=1000, liveness=50, session="b"))
                            router.send(peer, Invoke("r", "s", 1, "test.echo"))
                        elif isinstance(message, Outcome):
                            answered.append(message)
            tg.cancel_scope.cancel()
    events = [entry["event"] for entry in logs if entry["event"] in ("welcome_invalid", "worker_registered")]
    assert events == ["welcome_invalid", "worker_registered"]
    assert (answered[0].event, answered[0].session) == ("success", "b")
    assert (host.heartbeat_s, host.liveness) == (1.0, 50)


def test_answers_are_kept_at_most_the_longest_window_whatever_a_welcome_says() -> None:
    assert held_window_ms(1000, 3) == 4000
    assert held_window_ms(86_400_000, 1000) == MAX_SEEN_WINDOW_MS
