"""A client that never reads its replies holds a bounded part of the daemon's memory (red team,
session 21): ZeroMQ queues up to 1,000 messages for each peer by default, so a client sending
``Show`` requests of a run with a 900 KB context and reading nothing grew the daemon by about
1.3 GB (each such client as much). The daemon's ROUTER now queues at most
``CLIENT_SEND_HWM`` messages a peer; past that a reply to it is dropped and counted
(``send_dropped``, reason ``high_water_mark``), never buffered (a real daemon, socket and client)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
import zmq
import zmq.asyncio

from ontoflow.protocols.client import RunTrace, Show, Submit, SubmitAccepted, client_to_frames
from ontoflow.runtime.cli import open_client, request
from ontoflow.runtime.daemon import DaemonConfig, serve_daemon
from ontoflow.runtime.daemon_config import CLIENT_SEND_HWM
from tests.integration.durable_capabilities import manifest

pytestmark = pytest.mark.anyio

_REQUESTS = 400


async def test_replies_to_a_client_that_never_reads_are_dropped_and_counted_past_the_bound(tmp_path: Path) -> None:
    config = DaemonConfig(bind=f"ipc://{tmp_path}/d.sock", announce=False, schedule_to_start_ms=3_600_000,
                          capabilities=["tests/integration/durable_capabilities.py"])
    async with anyio.create_task_group() as tg:
        orch = await tg.start(serve_daemon, config)
        async with open_client(orch.address) as client:  # a run waiting for a worker, its context 900 KB
            accepted = await request(client, Submit(manifest=manifest(1), inputs={"t.value": 1, "t.blob": "x" * 900_000}))
            assert isinstance(accepted, SubmitAccepted), accepted
        ctx = zmq.asyncio.Context()
        sock = ctx.socket(zmq.DEALER)
        sock.linger, sock.sndhwm, sock.rcvhwm = 0, 0, 1  # sends all, reads nothing
        sock.connect(orch.address)
        router = orch.outbox._sink  # the daemon's ROUTER: what it did not send, counted
        try:
            frames = client_to_frames(Show(run_id=accepted.run_id))
            for _ in range(_REQUESTS):
                await sock.send_multipart(frames)
            # Before: ZeroMQ queued every reply (up to 1,000): none was dropped, this waited out.
            with anyio.fail_after(30):
                while router.not_sent().by_reason.get("high_water_mark", 0) < _REQUESTS - 2 * CLIENT_SEND_HWM:
                    await anyio.sleep(0.05)  # the daemon answers on this loop: give it turns
        finally:
            sock.close()
            ctx.term()
        async with open_client(orch.address) as client:  # and it serves on
            shown = await request(client, Show(run_id=accepted.run_id), timeout_s=10)
            assert isinstance(shown, RunTrace) and shown.run_id == accepted.run_id
        tg.cancel_scope.cancel()
