"""A daemon stopped (SIGTERM) while a client's new document is checked off its loop answers
that request, and those the client queued behind it, ``unavailable`` before it exits. Before,
the check was cancelled with the daemon and nothing was answered: the client waited to its own
timeout. A real ``ontoflow daemon``, a real DEALER."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import anyio
import msgspec
import pytest
import zmq

from ontoflow.protocols.client import CLIENT_HEADER, Error, replies_from_frames
from ontoflow.runtime.transport import shared_context
from tests.integration.durable_capabilities import manifest
from tests.integration.durable_helpers import CAPS, Daemon

pytestmark = pytest.mark.anyio


def _deferred(log: Path) -> bool:
    """Whether the daemon's log says a document's check was deferred off its loop."""
    if not log.exists():
        return False
    return any(json.loads(line).get("event") == "document_check_deferred"
               for line in log.read_text().splitlines() if line.startswith("{"))


async def test_requests_waiting_on_a_check_are_answered_unavailable_at_shutdown(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    log = tmp_path / "d.log"
    # The capability's metadata only (no worker): a 5,000-block document takes about a second to check.
    daemon = Daemon(address, None, log, "--capabilities", str(CAPS), "--log-level", "debug")
    client = zmq.Socket(shared_context(), zmq.DEALER)
    client.linger = 0
    replies: list = []
    try:
        await daemon.ready()
        client.connect(address)
        # One frame: the status is queued behind the submit in the same pass of the daemon's loop.
        client.send_multipart([CLIENT_HEADER, msgspec.msgpack.encode({"op": "requests", "messages": [
            {"op": "submit", "manifest": manifest(steps=5_000), "inputs": {"t.value": 1}},
            {"op": "status", "run_id": "nothing"}]})])
        with anyio.fail_after(60):  # a hang guard only
            while not _deferred(log):
                await anyio.sleep(0.01)  # polling a file another process writes: no event to wait on
        daemon.proc.send_signal(signal.SIGTERM)
        # Far below a client's timeout (the CLI's is 10 s to a minute): answered as the daemon stops.
        with anyio.fail_after(20):
            while len(replies) < 2:
                if await anyio.to_thread.run_sync(client.poll, 100):
                    replies += replies_from_frames(client.recv_multipart())
            code = await anyio.to_thread.run_sync(daemon.proc.wait)
    finally:
        client.close()
        daemon.close()
    assert [(type(r), getattr(r, "code", None)) for r in replies] == [(Error, "unavailable")] * 2, replies
    assert code == 0
    assert "Traceback" not in log.read_text()
