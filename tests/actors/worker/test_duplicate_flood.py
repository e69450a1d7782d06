"""A flood of copies of one attempt (a confused or hostile orchestrator) is logged within a
budget (``runtime.log_budget``): the first few copies one by one, the rest counted on one
summary line an interval. Before, each copy wrote its own ``invoke_duplicate`` warning: a peer
sending a million copies wrote a million lines to the worker's log."""

from __future__ import annotations

import itertools
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from ontoflow.actors.capability import Capability
from ontoflow.actors.worker import WorkerHost
from ontoflow.protocols import CapabilityMetadata
from ontoflow.protocols.messages import Batch, Invoke, Outcome, Ready, Welcome
from ontoflow.runtime.transport import open_router, shared_context

pytestmark = pytest.mark.anyio

_names = itertools.count()
COPIES = 2_000


class Once(Capability):
    metadata = CapabilityMetadata(id="test.once", idempotent=False)

    async def execute(self, inputs: dict[str, Any], context: Any) -> None:
        return None


async def test_copies_of_an_attempt_are_not_logged_one_line_each() -> None:
    context = shared_context()
    address = f"inproc://flood-{next(_names)}"
    invoke = Invoke(run_id="r1", step_id="s1", attempt=1, capability="test.once")
    last = Invoke(run_id="r1", step_id="last", attempt=1, capability="test.once")
    answered: list[str] = []
    with capture_logs() as logs:
        async with open_router(address, context=context) as router, anyio.create_task_group() as tg:
            tg.start_soon(WorkerHost([Once()], address=address, context=context, worker_id="w1").run)
            with anyio.fail_after(30):
                while "last" not in answered:
                    for peer, message in await router.recv_batch():
                        if isinstance(message, Ready):
                            router.send(peer, Welcome(worker_id="w1", heartbeat_ms=1000, liveness=50, session="tok"))
                            router.send(peer, invoke)
                            for _ in range(COPIES // 500):
                                router.send(peer, Batch([invoke] * 500))
                            router.send(peer, last)
                        elif isinstance(message, Outcome):
                            answered.append(message.step_id)
            tg.cancel_scope.cancel()
    assert answered == ["s1", "last"]
    lines = [entry for entry in logs if entry["event"] == "invoke_duplicate"]
    assert 1 <= len(lines) <= 20
