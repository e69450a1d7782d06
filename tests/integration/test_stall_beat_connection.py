"""The daemon's side of a worker's heartbeat thread (``actors.worker._stall_beats``): a Heartbeat
from the connection named as a worker's with ``STALL_BEAT_SUFFIX`` keeps that worker alive
when, and only when, it carries the worker's session token. A forged one is an unknown peer's.
A real orchestrator on a real socket."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
import zmq
import zmq.asyncio

from ontoflow.actors.orchestrator import Orchestrator
from ontoflow.actors.worker._stall_beats import StallBeats
from ontoflow.protocols.messages import PROTOCOL_VERSION, STALL_BEAT_SUFFIX, Disconnect, Heartbeat, Ready, Welcome
from ontoflow.runtime.codec import from_frames, to_frames
from ontoflow.runtime.transport import shared_context

pytestmark = pytest.mark.anyio


async def _until(sock: zmq.asyncio.Socket, kind: type) -> object:
    while True:
        for reply in from_frames(await sock.recv_multipart()):
            if isinstance(reply, kind):
                return reply


async def test_a_heartbeat_from_the_stall_connection_counts_only_with_the_session_token(tmp_path: Path) -> None:
    async with anyio.create_task_group() as tg:
        orch = await tg.start(Orchestrator(address=f"ipc://{tmp_path}/o.sock", context=shared_context()).run)
        ctx = zmq.asyncio.Context()
        worker, beats = ctx.socket(zmq.DEALER), ctx.socket(zmq.DEALER)
        worker.routing_id, beats.routing_id = b"w1", b"w1" + STALL_BEAT_SUFFIX
        for sock in (worker, beats):
            sock.linger = 0
            sock.connect(orch.address)
        try:
            with anyio.fail_after(30):
                await worker.send_multipart(to_frames(Ready(protocol=PROTOCOL_VERSION, worker_id="w1")))
                welcome = await _until(worker, Welcome)
                registered = orch.pool.registry.get(b"w1")
                assert registered is not None and not registered.confirmed
                await beats.send_multipart(to_frames(Heartbeat(session="forged")))
                await beats.send_multipart(to_frames(Heartbeat(session=welcome.session)))
                # Refused: its Disconnect says both heartbeats before it (same connection) were handled.
                await beats.send_multipart(to_frames(Ready(protocol=PROTOCOL_VERSION, worker_id="not#an-id")))
                await _until(beats, Disconnect)
        finally:
            worker.close()
            beats.close()
            ctx.term()
        tg.cancel_scope.cancel()
    assert orch.pool.refused["heartbeat_unknown"] == 1  # the forged one
    assert registered.confirmed  # the worker's own token, from its other connection: it is alive


async def test_a_peer_holding_the_guessable_beat_identity_does_not_silence_the_workers_thread(tmp_path: Path) -> None:
    """A ROUTER keeps the first connection under an identity: a peer that took ``w1#beat``
    before the worker's thread connected held that route, and the thread's beats (with the
    right token) went nowhere. The thread's identity carries a random tail of its own."""
    beats_of = StallBeats("w1", address="inproc://unused", context=None, curve=None, allowance_ms=1.0, clock=lambda: 0)
    assert beats_of.identity.startswith(b"w1" + STALL_BEAT_SUFFIX) and len(beats_of.identity) > len(b"w1#beat")
    assert StallBeats("w1", address="inproc://unused", context=None, curve=None, allowance_ms=1.0,
                      clock=lambda: 0).identity != beats_of.identity  # drawn per process: nobody can take it first
    async with anyio.create_task_group() as tg:
        orch = await tg.start(Orchestrator(address=f"ipc://{tmp_path}/o.sock", context=shared_context()).run)
        ctx = zmq.asyncio.Context()
        squat = ctx.socket(zmq.DEALER)
        squat.routing_id, squat.linger = b"w1" + STALL_BEAT_SUFFIX, 0
        squat.connect(orch.address)
        worker, beats = ctx.socket(zmq.DEALER), ctx.socket(zmq.DEALER)
        worker.routing_id, beats.routing_id = b"w1", beats_of.identity
        try:
            with anyio.fail_after(30):
                await squat.send_multipart(to_frames(Ready(protocol=PROTOCOL_VERSION, worker_id="not#an-id")))
                await _until(squat, Disconnect)  # its connection is read: it holds ``w1#beat``
                for sock in (worker, beats):
                    sock.linger = 0
                    sock.connect(orch.address)
                await worker.send_multipart(to_frames(Ready(protocol=PROTOCOL_VERSION, worker_id="w1")))
                welcome = await _until(worker, Welcome)
                registered = orch.pool.registry.get(b"w1")
                assert registered is not None and not registered.confirmed
                await beats.send_multipart(to_frames(Heartbeat(session=welcome.session)))
                await beats.send_multipart(to_frames(Ready(protocol=PROTOCOL_VERSION, worker_id="not#an-id")))
                await _until(beats, Disconnect)  # read: the heartbeat before it was handled
        finally:
            for sock in (worker, beats, squat):
                sock.close()
            ctx.term()
        tg.cancel_scope.cancel()
    assert registered.confirmed
