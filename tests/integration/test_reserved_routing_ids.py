"""A client that claims a routing identity of the kind libzmq makes up for peers that give none
(a zero byte and a 32-bit counter) must not abort the daemon when the counter reaches it.

libzmq's ROUTER numbers such peers from a start drawn with the C library's ``rand()``, unseeded:
0x6b8b4567 in every process, then one more per connection. A second peer under a taken
identity trips an assertion (``socket_base.cpp``: abort, no log line, every run lost). A client
that connected as ``b"\\x00\\x6b\\x8b\\x45\\x67"`` therefore killed a fresh daemon as soon as
anyone else (a worker, ``ontoflow status``) connected. The daemon now seeds that start from the
operating system's randomness when it binds (``runtime.transport._open``), so the next numbers
cannot be known from outside (a real daemon process: the abort would take pytest with it)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
import zmq

from ontoflow.protocols.client import Workers, WorkersInfo, client_to_frames, replies_from_frames
from tests.integration.durable_helpers import Daemon

pytestmark = pytest.mark.anyio

#: libzmq's first made-up routing id in a process whose ``rand()`` was never seeded.
UNSEEDED_START = 0x6B8B4567
CLAIMED = 32


def _ask_workers(sock: zmq.Socket) -> list:
    sock.send_multipart(client_to_frames(Workers()))
    if not sock.poll(20_000):
        return []
    return replies_from_frames(sock.recv_multipart())


async def test_claiming_the_identities_libzmq_would_make_up_next_does_not_abort_the_daemon(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    daemon = Daemon(address, None, tmp_path / "d.log")
    ctx = zmq.Context()
    sockets: list[zmq.Socket] = []

    def connect(identity: bytes | None) -> zmq.Socket:
        sock = ctx.socket(zmq.DEALER)
        sock.linger = 0
        if identity is not None:
            sock.setsockopt(zmq.ROUTING_ID, identity)
        sock.connect(address)
        sockets.append(sock)
        return sock

    try:
        await daemon.ready()
        with anyio.fail_after(120):
            for n in range(CLAIMED):  # the squatter: the ids the daemon would give its next peers
                claimed = connect(b"\x00" + (UNSEEDED_START + n).to_bytes(4, "big"))
                assert await anyio.to_thread.run_sync(_ask_workers, claimed) != []  # it is served, as any client
            for _ in range(CLAIMED):  # then anyone connecting without an identity (every CLI verb does)
                replies = await anyio.to_thread.run_sync(_ask_workers, connect(None))
                assert daemon.proc.poll() is None, daemon.proc.stderr.read().decode()[-500:] if daemon.proc.stderr else ""
                assert [type(r) for r in replies] == [WorkersInfo]
    finally:
        for sock in sockets:
            sock.close()
        ctx.term()
        daemon.close()
