"""A worker whose first ``Ready`` is bigger than the daemon's ``--max-message-bytes`` (it cannot
know the limit before the Welcome says it): libzmq drops the connection without a word; the
worker says so, with its Ready's size (real daemon and worker processes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import msgspec
import pytest
import zmq

from ontoflow.protocols.client import CLIENT_HEADER, replies_from_frames
from ontoflow.runtime.transport import shared_context
from tests.integration.durable_helpers import Daemon

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
LIMIT = 65_536


def _workers(address: str) -> list:
    sock = zmq.Socket(shared_context(), zmq.DEALER)
    sock.linger = 0
    sock.connect(address)
    try:
        sock.send_multipart([CLIENT_HEADER, msgspec.msgpack.encode({"op": "requests", "messages": [{"op": "workers"}]})])
        if not sock.poll(30_000):  # a hang guard only
            raise TimeoutError("no answer")
        return replies_from_frames(sock.recv_multipart())[0].workers
    finally:
        sock.close()


async def test_a_worker_never_welcomed_says_its_ready_size_and_what_to_raise(tmp_path: Path) -> None:
    # Before: the worker logged only orchestrator_unreachable / orchestrator_silent warnings,
    # for ever, as if no daemon were there; the daemon logged nothing at all.
    address = f"ipc://{tmp_path}/d.sock"
    daemon = Daemon(address, None, tmp_path / "d.log", "--max-message-bytes", str(LIMIT))
    await daemon.ready()
    worker_log = tmp_path / "w.log"
    with open(worker_log, "wb") as err:
        worker = subprocess.Popen([sys.executable, str(REPO / "tests/integration/not_welcomed_capabilities.py"), address],
                                  cwd=REPO, stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL)
    try:
        with anyio.fail_after(60):  # a hang guard only
            while "worker_not_welcomed" not in worker_log.read_text():
                await anyio.sleep(0.05)  # polling the worker's own log, not waiting for time to pass
        workers = await anyio.to_thread.run_sync(_workers, address)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
        daemon.close()
    assert workers == []  # never registered
    lines = [json.loads(line) for line in worker_log.read_text().splitlines() if "worker_not_welcomed" in line]
    assert len(lines) == 1, lines  # once a streak, not at every retry
    line = lines[0]
    assert line["level"] == "error" and line["ready_bytes"] > LIMIT and line["capabilities"] == 200, line
    assert f"--max-message-bytes is below {line['ready_bytes']:,}" in line["hint"]
    assert "a key with a long description" not in worker_log.read_text()  # sizes, never the metadata
