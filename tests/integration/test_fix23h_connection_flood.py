"""A real daemon's HTTP entry under a flood of idle connections from one address: past its
share (``max_connections_per_client``, 64 by default) each connection is answered 503 and
closed at once, so the daemon's file descriptors stay bounded; meanwhile a client from another
address and the daemon's own client API are served, and once the flood closes, the ``openai``
client from the flooding address is served again.

Before, every connection was held by Hypercorn until its idle timer (5 s), renewed as fast as
the flood reconnected: 300 connections were 300 descriptors of the daemon, and a flood of a few
thousand left it none for its journal and its workers."""

from __future__ import annotations

import os
import selectors
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import openai

REPO = Path(__file__).resolve().parents[2]
FINANCE = REPO / "configs" / "examples" / "finance"
PYTHON = [sys.executable, "-m", "ontoflow"]
FLOOD = 300
SHARE = 64  # the entry's default max_connections_per_client


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _closed_by_the_entry(flood: list[socket.socket], count: int, within_s: float) -> dict[socket.socket, bytes]:
    """What the entry sent on each connection it closed, once ``count`` are (bounded: a condition)."""
    got: dict[socket.socket, bytes] = {s: b"" for s in flood}
    closed: dict[socket.socket, bytes] = {}
    with selectors.DefaultSelector() as selector:
        for s in flood:
            selector.register(s, selectors.EVENT_READ)
        end = time.monotonic() + within_s
        while len(closed) < count and time.monotonic() < end:
            for key, _ in selector.select(timeout=1):
                s = key.fileobj
                assert isinstance(s, socket.socket)
                try:
                    data = s.recv(4096)
                except ConnectionResetError:
                    data = b""
                if data:
                    got[s] += data
                else:
                    selector.unregister(s)
                    closed[s] = got[s]
    return closed


def test_an_idle_flood_is_bounded_and_the_daemon_still_serves(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "xdg"), XDG_STATE_HOME=str(tmp_path / "state"))
    daemon = subprocess.Popen([*PYTHON, "daemon", "--bind", "tcp://127.0.0.1:0", "--domains", str(FINANCE),
                               "--http-bind", "127.0.0.1:0", "--log-file", "daemon.log"], cwd=tmp_path, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    assert daemon.stdout is not None
    address = daemon.stdout.readline().decode().split()[-1]
    http = daemon.stdout.readline().decode().split()[-1]
    host, _, port = http.removeprefix("http://").rpartition(":")
    flood: list[socket.socket] = []
    try:
        before = _fds(daemon.pid)
        for _ in range(FLOOD):
            flood.append(socket.create_connection((host, int(port)), timeout=30))
        closed = _closed_by_the_entry(flood, FLOOD - SHARE, within_s=60)
        assert len(closed) == FLOOD - SHARE
        assert all(sent.startswith(b"HTTP/1.1 503 ") and b"too_many_connections" in sent for sent in closed.values())
        assert _fds(daemon.pid) - before <= SHARE + 8  # 300 before: one per connection
        # Closed here: left to the collector, its socket's ResourceWarning failed whichever test
        # of this process ran when it was collected.
        with httpx2.Client(transport=httpx2.HTTPTransport(local_address="127.0.0.2")) as source, \
                openai.OpenAI(base_url=f"{http}/v1", api_key="unused", max_retries=0, timeout=30,
                              http_client=source) as other:
            assert [m.id for m in other.models.list()] == ["ontoflow"]  # another address is served meanwhile
        workers = subprocess.run([*PYTHON, "workers", "--json", "--connect", address], cwd=tmp_path, env=env,
                                 capture_output=True, timeout=60)
        assert workers.returncode == 0  # the daemon's client API too
        for s in flood:
            s.close()
        flood.clear()
        with openai.OpenAI(base_url=f"{http}/v1", api_key="unused", max_retries=3, timeout=30) as again:
            assert [m.id for m in again.models.list()] == ["ontoflow"]
    finally:
        for s in flood:
            s.close()
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=60) == 0
        daemon.stdout.close()
