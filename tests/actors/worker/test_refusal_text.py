"""The reason of an orchestrator's ``Disconnect`` is peer text: a worker shows it (its error, its
log line, ``ontoflow worker``'s last line) as one line of at most ``MAX_REFUSAL_CHARS``
printable characters. Before, it was taken whole: a hostile or confused peer's newlines forged
lines of the worker's output ("FAKE: all good") and its 100 kB reason was printed and logged whole."""

from __future__ import annotations

import itertools

import anyio
import pytest

from ontoflow.actors.capability import Capability
from ontoflow.actors.errors import WorkerRefusedError
from ontoflow.actors.worker import WorkerHost
from ontoflow.protocols import CapabilityMetadata
from ontoflow.protocols.messages import Disconnect, Ready
from ontoflow.runtime.transport import open_router, shared_context

pytestmark = pytest.mark.anyio

_names = itertools.count()


class Idle(Capability):
    metadata = CapabilityMetadata(id="test.idle")

    async def execute(self, inputs, context):
        return None


async def test_a_refusals_reason_is_shown_as_one_bounded_printable_line() -> None:
    context = shared_context()
    address = f"inproc://refusal-{next(_names)}"
    reason = "\x1b[2Jbye\nFAKE: all good\r" + "A" * 100_000
    refused: list[WorkerRefusedError] = []
    ended = anyio.Event()

    async def serve(host: WorkerHost) -> None:
        try:
            await host.run()
        except* WorkerRefusedError as group:  # out of the session's task groups
            while isinstance(group, BaseExceptionGroup):
                group = group.exceptions[0]
            refused.append(group)
        finally:
            ended.set()

    async with open_router(address, context=context) as router, anyio.create_task_group() as tg:
        tg.start_soon(serve, WorkerHost([Idle()], address=address, context=context, worker_id="w1"))
        with anyio.fail_after(15):
            while not ended.is_set():
                for peer, message in await router.recv_batch():
                    if isinstance(message, Ready):
                        router.send(peer, Disconnect(reason=reason))
                        await ended.wait()
    shown = str(refused[0])
    assert shown.isprintable() and len(shown) <= 201  # MAX_REFUSAL_CHARS, and the mark of a cut
    assert shown.startswith("?[2Jbye FAKE: all good AAA")
