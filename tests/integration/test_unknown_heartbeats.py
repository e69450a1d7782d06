"""Heartbeats from a peer that is not a registered worker are logged within a budget (red team,
session 21): ``heartbeat_from_unknown_peer`` was written once per heartbeat, so any peer could
flood the daemon's log at the rate it sends. They are counted (``WorkerPool.refused``,
``heartbeat_unknown``) and logged at the 1st, 2nd, 4th, 8th... with the count, as refused
observations are. A real orchestrator on a real socket."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
import structlog
import zmq
import zmq.asyncio

from ontoflow.actors.orchestrator import Orchestrator
from ontoflow.protocols.messages import PROTOCOL_VERSION, Heartbeat, Ready, Welcome
from ontoflow.runtime.codec import from_frames, to_frames
from ontoflow.runtime.transport import shared_context

pytestmark = pytest.mark.anyio

_BEATS = 2_000


async def test_a_flood_of_unknown_heartbeats_writes_a_few_lines_with_the_count(tmp_path: Path) -> None:
    with structlog.testing.capture_logs() as logs:
        async with anyio.create_task_group() as tg:
            orch = await tg.start(Orchestrator(address=f"ipc://{tmp_path}/o.sock", context=shared_context()).run)
            ctx = zmq.asyncio.Context()
            sock = ctx.socket(zmq.DEALER)
            sock.linger = 0
            sock.sndhwm = 0
            sock.connect(orch.address)
            try:
                for _ in range(_BEATS):
                    await sock.send_multipart(to_frames(Heartbeat(session="forged")))
                # A Ready after them: its Welcome says every heartbeat before it was handled.
                await sock.send_multipart(to_frames(Ready(protocol=PROTOCOL_VERSION, worker_id="w1")))
                replies: list[object] = []
                with anyio.fail_after(30):
                    while not any(isinstance(r, Welcome) for r in replies):
                        replies += from_frames(await sock.recv_multipart())
            finally:
                sock.close()
                ctx.term()
            tg.cancel_scope.cancel()
    lines = [e for e in logs if e["event"] == "heartbeat_from_unknown_peer"]
    assert 1 <= len(lines) <= 12, len(lines)  # before: 2,000
    assert lines[-1]["count"] == 1_024 and orch.pool.refused["heartbeat_unknown"] == _BEATS
