"""A step that ignores its Cancel (catches the cancellation and goes on) is answered after the
worker's cancel grace (``cancelled``, reason ``cancel_ignored``), its slot given back, and the
worker reports it: a ``step_cancel_ignored`` log line and ``stuck`` in its statistics, until
it ends. Before, it held its slot for good: the worker served with one slot less and the
orchestrator kept the slot taken, so with one slot no other step ever ran there. Real sockets:
an orchestrator and a worker host over ``inproc://``."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from ontoflow.actors.capability import Capability
from ontoflow.actors.orchestrator import compose_orchestrator
from ontoflow.actors.orchestrator.engine import compile_workflow
from ontoflow.actors.worker import WorkerHost
from ontoflow.protocols import CapabilityMetadata
from ontoflow.protocols.manifest import manifest_from_data
from ontoflow.runtime.transport import shared_context

pytestmark = pytest.mark.anyio


class Stubborn(Capability):
    """Swallows every cancellation until the test lets it go."""

    metadata = CapabilityMetadata(id="t.stubborn", timeout_ms=None, events=["success", "failure"])
    started_event: anyio.Event
    release: asyncio.Event

    async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
        type(self).started_event.set()
        while not type(self).release.is_set():
            try:
                await type(self).release.wait()
            except asyncio.CancelledError:
                continue
        return None


class Fine(Capability):
    metadata = CapabilityMetadata(id="t.fine", timeout_ms=None, events=["success", "failure"])

    async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
        return None


def _workflow(capability: str, catalog: dict[str, Any]) -> Any:
    data = {"start": "m", "nodes": {"m": {"entry_block": "b", "blocks": {"b": {"worker": capability}}}}}
    return compile_workflow(manifest_from_data(data, catalog=catalog), catalog)


async def test_a_step_ignoring_its_cancel_is_answered_after_the_grace_and_its_slot_given_back() -> None:
    Stubborn.started_event = anyio.Event()
    Stubborn.release = asyncio.Event()
    context = shared_context()
    composed = compose_orchestrator(address=f"inproc://cancel-ignored-{uuid.uuid4().hex}", context=context,
                                    heartbeat_ms=100)
    orchestrator = composed.orchestrator
    catalog = {c.metadata.id: c.metadata for c in (Stubborn, Fine)}
    host = WorkerHost([Stubborn(), Fine()], address=orchestrator.address, context=context, slots=1, worker_id="w",
                      heartbeat_ms=100, cancel_grace_s=0.2)
    with capture_logs() as logs:
        async with anyio.create_task_group() as tg:
            await tg.start(orchestrator.run)
            await tg.start(host.run)
            try:
                with anyio.fail_after(20):
                    await orchestrator.wait_for_workers(1)
                    stuck_run = orchestrator.submit(_workflow("t.stubborn", catalog), {})
                    await Stubborn.started_event.wait()
                    orchestrator.cancel(stuck_run, "test")
                    assert (await orchestrator.result(stuck_run)).status == "cancelled"
                    # The only slot: before, this run waited for ever.
                    after = await orchestrator.result(orchestrator.submit(_workflow("t.fine", catalog), {}))
                    assert after.status == "completed"
                    assert host.statistics()["stuck"] == 1
                    Stubborn.release.set()
                    while host.statistics()["stuck"]:
                        await anyio.sleep(0.01)  # a condition polled: the stuck step ends at its next turn
            finally:
                Stubborn.release.set()  # else the stuck step would hold the test's task group for ever
            tg.cancel_scope.cancel()
    told = [e for e in logs if e["event"] == "step_cancel_ignored"]
    assert len(told) == 1 and told[0]["run_id"] == stuck_run and told[0]["stuck"] == 1
    assert [e["event"] for e in logs if e["event"] == "stuck_step_ended"] == ["stuck_step_ended"]
