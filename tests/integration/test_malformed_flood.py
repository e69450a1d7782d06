"""A live run finishes on a real daemon while other peers throw malformed frames at its ROUTER
(worker-facing and client-facing headers, the frames that used to kill its receive loop)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import anyio
import msgspec
import pytest
import zmq

from ontoflow.protocols.client import CLIENT_HEADER, Error, RunStatus, Status, Submit, SubmitAccepted, Workers, WorkersInfo
from ontoflow.protocols.client import client_from_frames
from ontoflow.runtime.cli import open_client, request
from ontoflow.runtime.codec import HEADER
from tests.integration.durable_capabilities import manifest
from tests.integration.durable_helpers import Daemon, Worker

pytestmark = pytest.mark.anyio

_enc = msgspec.msgpack.encode
DEEP = b"\x91" * 1200 + b"\xc0"

WORKER_FRAMES = [
    [HEADER, b"\x91\xa2\xf7\xf7"],
    [HEADER, b"\x96" + b"".join(_enc(x) for x in ["outcome", "r", "s", 1, "e"]) + b"\x81\xa1k" + DEEP],
    [HEADER, b"\xc1\xc1"],
    [HEADER, _enc(["ready", "wrong shape"])],
    [b"not ours", b"x"],
]
CLIENT_FRAMES = [
    [CLIENT_HEADER, b"\x91\xa2\xf7\xf7"],
    [CLIENT_HEADER, b"\x82\xa2op\xa6status\xa6run_id\xa2\xf7\xf7"],
    [CLIENT_HEADER, b"\x82\xa2op\xa6submit\xa6inputs\x81\xa1k" + DEEP],
    [CLIENT_HEADER, _enc({"op": "nope"})],
]


async def _wait_for_capability(client, capability: str) -> None:
    with anyio.fail_after(30):
        while True:
            info = await request(client, Workers())
            assert isinstance(info, WorkersInfo)
            if any(capability in w.capabilities for w in info.workers):
                return
            await anyio.sleep(0.02)  # re-asked: registration is the worker's move


def _thrower(address: str, frames: list[list[bytes]], stop: threading.Event, sent: list[int]) -> None:
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.linger = 0
    sock.sndtimeo = 100
    sock.connect(address)
    try:
        n = 0
        while not stop.is_set():
            try:
                sock.send_multipart(frames[n % len(frames)])
            except zmq.Again:
                continue
            n += 1
        sent.append(n)
    finally:
        sock.close()
        ctx.term()


async def test_a_run_finishes_while_malformed_frames_fly(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    log = tmp_path / "d.log"
    worker = Worker(address, tmp_path / "a.audit", step_s=0.05)
    daemon = Daemon(address, tmp_path / "j.sqlite", log)
    stop, sent = threading.Event(), []
    throwers = [threading.Thread(target=_thrower, args=(address, f, stop, sent)) for f in (WORKER_FRAMES, CLIENT_FRAMES)]
    try:
        await daemon.ready()
        async with open_client(address) as client:
            await _wait_for_capability(client, "t.durable.step")
            for t in throwers:
                t.start()
            accepted = await request(client, Submit(manifest=manifest(5), inputs={"t.value": 1}))
            assert isinstance(accepted, SubmitAccepted)
            status = await request(client, Status(run_id=accepted.run_id, wait=True), timeout_s=60)
            stop.set()
            for t in throwers:
                await anyio.to_thread.run_sync(t.join)
            assert isinstance(status, RunStatus) and status.status == "completed"
            assert status.context["t.value"] == 364  # 1 -> 4 -> 13 -> 40 -> 121 -> 364
            assert daemon.proc.poll() is None
            assert isinstance(await request(client, Workers()), WorkersInfo)  # still serving
        assert daemon.terminate() == 0
    finally:
        stop.set()
        daemon.close()
        worker.close()
    thrown = sum(sent)
    assert thrown >= 100
    events = [json.loads(line).get("event") for line in log.read_text().splitlines() if line.startswith("{")]
    detailed = events.count("frame_dropped")
    # One line per frame would be `thrown` lines; the detail budget keeps a flood to a few.
    assert detailed <= 10 * (1 + events.count("frames_dropped"))
    assert detailed < thrown


def _raw_request(address: str, body: bytes) -> object:
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.linger = 0
    sock.connect(address)
    try:
        sock.send_multipart([CLIENT_HEADER, body])
        if not sock.poll(10_000):
            return None
        return client_from_frames(sock.recv_multipart())
    finally:
        sock.close()
        ctx.term()


async def test_a_manifest_with_invalid_utf8_is_an_invalid_manifest(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    daemon = Daemon(address, tmp_path / "j.sqlite", tmp_path / "d.log")
    try:
        await daemon.ready()
        body = b"\x82\xa2op\xa6submit\xa8manifest\x81\xa5start\xa2\xf7\xf7"
        reply = await anyio.to_thread.run_sync(_raw_request, address, body)
        assert daemon.proc.poll() is None
        assert isinstance(reply, Error) and reply.code == "invalid_manifest" and "UTF-8" in reply.message
    finally:
        daemon.close()
