"""A worker whose restarted daemon answers its Ready later than one liveness window still
registers: each session in a row that was not welcomed waits longer for its Welcome
(``ReconnectBackoff.patience``). With a fixed window, every Ready reached the daemon just as
its session gave up, the daemon's Welcome went to a closed socket, and the worker never
registered again (seen once in ``test_cli_replay``: its recovered run ended unavailable).

Why a fixed window never recovers from a busy daemon: a session that gave up leaves its Ready
unread in the daemon's ROUTER, and libzmq keeps that connection's route (the worker's
identity) until the daemon has read it. The next session, connecting meanwhile under the same
identity, is ignored by the ROUTER (no ``ROUTER_HANDOVER``) for its whole life: its Ready is
never read and nothing reaches it. The daemon then reads the old Ready and welcomes a socket
that is gone. A daemon that reads its socket less often than once per window plus backoff
(busy recovering, on a loaded machine) repeats this for every session.

Time is virtual: the host's Ticks are delivered by hand (``host.tick``) on a clock the test
moves, and the test daemon (a real ROUTER on ``ipc://``) reads its socket
``DAEMON_DELAY_MS`` of that clock after a session opened (and sent its Ready), and answers
every Ready it reads at once; it reads again only after a session opened since.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import anyio
import pytest
import zmq
from anyio.lowlevel import checkpoint

from ontoflow.actors.capability import Capability
from ontoflow.actors.worker import ReconnectBackoff, WorkerHost
from ontoflow.protocols import CapabilityMetadata
from ontoflow.protocols.messages import Ready, Welcome
from ontoflow.runtime.transport import open_router, shared_context

pytestmark = pytest.mark.anyio

_names = itertools.count()

HEARTBEAT_MS, LIVENESS = 20, 3  # a liveness window of 60 ms
DAEMON_DELAY_MS = 150  # a busy daemon: it reads a Ready 2.5 windows after it was sent
STEP_MS = 5  # the virtual clock moves this much per Tick


class Noop(Capability):
    """Does nothing (the host needs a capability to announce)."""

    metadata = CapabilityMetadata(id="test.noop")

    async def execute(self, inputs, context):
        return None


async def _idle() -> None:
    """Stands in for the host's timer: no Tick but the test's."""
    await anyio.sleep_forever()


async def _settle(rounds: int = 20) -> None:
    """Let the sockets and the host's runners move (no time passes on the virtual clock)."""
    for _ in range(rounds):
        await checkpoint()


def test_patience_doubles_with_each_session_not_welcomed_up_to_its_cap() -> None:
    backoff = ReconnectBackoff(0.05, 0.2)
    seen = [backoff.patience()]
    for _ in range(6):
        backoff.next_ms(welcomed=False)
        seen.append(backoff.patience())
    assert seen == [1, 2, 4, 8, 8, 8, 8]
    backoff.next_ms(welcomed=True)
    assert backoff.patience() == 1


async def test_a_worker_registers_with_a_daemon_slower_than_its_liveness_window(tmp_path: Path) -> None:
    context = shared_context()
    address = f"ipc://{tmp_path}/rejoin-{next(_names)}.sock"
    now = [1_000_000]
    host = WorkerHost([Noop()], address=address, context=context, worker_id="w1", heartbeat_ms=HEARTBEAT_MS,
                      liveness=LIVENESS, reconnect_initial_s=0.01, reconnect_max_s=0.02)
    host._clock = lambda: now[0]  # virtual time: the host's only clock
    host.run_timer = _idle  # type: ignore[method-assign]  # Ticks come from the test only
    registered = host.registered
    async with open_router(address, context=context) as router, anyio.create_task_group() as tg:
        tg.start_soon(host.run)
        # Each session's connection is made (libzmq's handshake done) before time moves on:
        # the ROUTER has then seen its identity, whatever the machine's load.
        monitor = router._sock.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED)
        handshakes = 0
        started = seen = host.sessions
        next_read: int | None = None
        with anyio.fail_after(20):
            while not registered.is_set():
                await _settle()
                if host.sessions != seen:  # a session opened (its Ready is on its way)
                    seen = host.sessions
                    while handshakes < seen - started:
                        await monitor.recv_multipart()
                        handshakes += 1
                    router._sock.get(zmq.EVENTS)  # the ROUTER takes the new connection in
                    await _settle()
                    if next_read is None:
                        next_read = now[0] + DAEMON_DELAY_MS
                if next_read is not None and now[0] >= next_read:
                    next_read = None  # the next read comes DAEMON_DELAY_MS after the next Ready
                    for peer, message in router.recv_batch_nowait():
                        if isinstance(message, Ready):
                            router.send(peer, Welcome(worker_id="w1", heartbeat_ms=HEARTBEAT_MS, liveness=LIVENESS,
                                                      session="tok"))
                    await _settle()
                    if registered.is_set():
                        break
                assert host.sessions - started < 30, "every session gave up before its Welcome came"
                now[0] += STEP_MS
                host.tick(now[0])
        tg.cancel_scope.cancel()
        router._sock.disable_monitor()
        monitor.close(linger=0)
    assert host.session_token == "tok"
