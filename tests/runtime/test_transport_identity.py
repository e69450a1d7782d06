"""What libzmq's ROUTER (no ``ROUTER_HANDOVER``) does with a connection made under an identity
whose previous connection closed with messages the ROUTER had not read yet: the old route
lasts until they are read, and the new connection is ignored for its whole life. The worker
host's reconnect relies on this being so (``actors/worker/_timers.py``, ``patience``)."""

from __future__ import annotations

import itertools
from pathlib import Path

import anyio
import pytest
import zmq

from ontoflow.protocols.messages import Heartbeat, Welcome
from ontoflow.runtime.transport import open_dealer, open_router, shared_context

pytestmark = pytest.mark.anyio

_names = itertools.count()


async def _handshake(monitor: zmq.Socket, router_sock: zmq.Socket) -> None:
    """Wait until the ROUTER completed one more connection's handshake and took it in."""
    with anyio.fail_after(10):
        await monitor.recv_multipart()
    router_sock.get(zmq.EVENTS)  # the ROUTER processes its commands: the connection is attached


async def test_a_connection_under_a_route_not_yet_read_is_ignored_for_its_whole_life(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/id-{next(_names)}.sock"
    async with open_router(address, context=shared_context()) as router:
        monitor = router._sock.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED)
        try:
            async with open_dealer(address, identity=b"w1") as old:
                old.send(Heartbeat(session="old"))
                await _handshake(monitor, router._sock)
            # The old connection is closed, its Heartbeat unread: its route lives on.
            async with open_dealer(address, identity=b"w1") as new:
                new.send(Heartbeat(session="new"))
                await _handshake(monitor, router._sock)
                with anyio.fail_after(10):
                    got = await router.recv_batch()
                assert got == [(b"w1", Heartbeat(session="old"))]
                # The old route is gone once read; the new connection never got one.
                with anyio.fail_after(10):
                    while not router.not_sent().total:
                        router.send(b"w1", Welcome(worker_id="w1", heartbeat_ms=100, liveness=3, session="t"))
                        await anyio.sleep(0.01)  # libzmq ends the read route in its own thread: asked again
                new.send(Heartbeat(session="new again"))
                assert router.recv_batch_nowait() == [] and new.recv_batch_nowait() == []
            # Once that connection is gone too, the identity is free: the next one is read.
            async with open_dealer(address, identity=b"w1") as third:
                third.send(Heartbeat(session="third"))
                with anyio.fail_after(10):
                    got = await router.recv_batch()
                assert got == [(b"w1", Heartbeat(session="third"))]
        finally:
            router._sock.disable_monitor()
            monitor.close(linger=0)
