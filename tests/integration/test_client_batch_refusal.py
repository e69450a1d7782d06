"""A daemon answers every request of a client's batch in order, a bad one refused in its place."""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
import pytest
import zmq

from ontoflow.protocols.client import CLIENT_HEADER, Error, WorkersInfo, replies_from_frames
from ontoflow.runtime.transport import shared_context
from tests.integration.durable_helpers import Daemon

pytestmark = pytest.mark.anyio


async def test_a_bad_request_in_a_batch_is_refused_in_its_place_and_the_others_answered(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    daemon = Daemon(address, tmp_path / "j.sqlite", tmp_path / "d.log")
    raw = zmq.Socket(shared_context(), zmq.DEALER)
    raw.linger = 0
    try:
        await daemon.ready()
        raw.connect(address)
        body = msgspec.msgpack.encode({"op": "requests", "messages": [
            {"op": "status", "run_id": "nope"}, {"op": "submit", "manifest": {}, "inputs": {1: "x"}},
            {"op": "workers"}]})
        raw.send_multipart([CLIENT_HEADER, body])

        def recv() -> list:
            got: list = []
            while len(got) < 3:
                if not raw.poll(20_000):
                    raise TimeoutError(f"answered {got}")
                got += replies_from_frames(raw.recv_multipart())
            return got

        with anyio.fail_after(30):
            replies = await anyio.to_thread.run_sync(recv)
    finally:
        raw.close()
        daemon.close()
    assert [type(r) for r in replies] == [Error, Error, WorkersInfo], replies
    assert replies[0].code == "unknown_run"
    assert replies[1].code == "invalid_request" and "request 1 of the batch" in replies[1].message
