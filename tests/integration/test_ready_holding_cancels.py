"""The Cancels a Ready's ``holding`` is answered with are bounded (red team, session 21): a
peer sending one Ready listing 100,000 attempts the daemon never heard of got 100,000 Cancels
back, an amplification any peer could ask for (without CURVE, any peer may send a Ready). A
Cancel stops a step the worker runs or has queued, at most its ``slots`` of them (an answer it
holds expires on its own), so at most ``min(slots, MAX_READY_CANCELS)`` go, in the Ready's
order (a worker lists its steps before its answers). A real orchestrator on a real socket."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
import structlog
import zmq
import zmq.asyncio

from ontoflow.actors.orchestrator import Orchestrator
from ontoflow.actors.orchestrator._ready_holding import MAX_READY_CANCELS
from ontoflow.protocols.messages import PROTOCOL_VERSION, Cancel, Ready, Welcome
from ontoflow.runtime.codec import from_frames, to_frames
from ontoflow.runtime.transport import shared_context

pytestmark = pytest.mark.anyio


async def _replies(sock: zmq.asyncio.Socket, welcomes: int) -> list[object]:
    replies: list[object] = []
    with anyio.fail_after(30):
        while sum(isinstance(r, Welcome) for r in replies) < welcomes:
            replies += from_frames(await sock.recv_multipart())
    return replies


@pytest.mark.parametrize("slots", [4, 100_000])
async def test_a_ready_holding_100000_unknown_attempts_gets_a_bounded_number_of_cancels(tmp_path: Path,
                                                                                         slots: int) -> None:
    held = [(f"run-{i}", "s1", 1) for i in range(100_000)]
    with structlog.testing.capture_logs() as logs:
        async with anyio.create_task_group() as tg:
            orch = await tg.start(Orchestrator(address=f"ipc://{tmp_path}/o.sock", context=shared_context()).run)
            ctx = zmq.asyncio.Context()
            sock = ctx.socket(zmq.DEALER)
            sock.linger = 0
            sock.rcvhwm = 0  # take everything the daemon sends: its count is the test
            sock.connect(orch.address)
            try:
                await sock.send_multipart(to_frames(Ready(protocol=PROTOCOL_VERSION, worker_id="w1", slots=slots,
                                                          holding=held)))
                first = await _replies(sock, 1)
                [welcome] = [r for r in first if isinstance(r, Welcome)]
                # The same Ready again with its session (our Welcome "lost"): answered with a
                # Welcome that follows every Cancel of the first on this connection.
                await sock.send_multipart(to_frames(Ready(protocol=PROTOCOL_VERSION, worker_id="w1", slots=slots,
                                                          session=welcome.session)))
                replies = first + await _replies(sock, 1)
            finally:
                sock.close()
                ctx.term()
            tg.cancel_scope.cancel()
    cancels = [r for r in replies if isinstance(r, Cancel)]
    most = min(slots, MAX_READY_CANCELS)
    assert [(c.run_id, c.step_id, c.attempt) for c in cancels] == held[:most]  # before: 100,000
    [line] = [e for e in logs if e["event"] == "ready_cancels_bounded"]
    assert line["stale"] == 100_000 and line["cancelled"] == most
