"""The ZeroMQ transport over real sockets: inproc, ipc and tcp."""

from __future__ import annotations

import itertools
from pathlib import Path

import anyio
import pytest
import zmq
from zmq.utils.monitor import parse_monitor_message
from structlog.testing import capture_logs

from ontoflow.protocols.client import RunStatus, Status, SubmitAccepted
from ontoflow.protocols.messages import Heartbeat, Invoke, Outcome
from ontoflow.runtime.codec import HEADER, to_frames
from ontoflow.runtime.errors import TransportError
from ontoflow.runtime.transport import DealerSocket, RouterSocket, open_dealer, open_router, shared_context

pytestmark = pytest.mark.anyio

_names = itertools.count()


@pytest.fixture(params=["inproc", "ipc", "tcp"])
def address(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "inproc":
        return f"inproc://transport-test-{next(_names)}"
    if request.param == "ipc":
        return f"ipc://{tmp_path / 'router.ipc'}"
    return "tcp://127.0.0.1:0"


def _raw(kind: int) -> zmq.Socket:
    """A plain synchronous socket on the shared context (inproc needs the same context)."""
    sock = zmq.Socket(shared_context(), kind)
    sock.linger = 0
    return sock


async def _recv_raw(sock: zmq.Socket) -> list[bytes]:
    """Receive on a raw socket from a worker thread, bounded (a thread cannot be cancelled)."""

    def recv() -> list[bytes]:
        if not sock.poll(5000):
            raise TimeoutError("nothing arrived on the raw socket")
        return sock.recv_multipart()

    return await anyio.to_thread.run_sync(recv)


def _invoke(n: int) -> Invoke:
    return Invoke(run_id="run", step_id=f"s{n}", attempt=n, capability="cap.echo")


def _outcome(n: int) -> Outcome:
    return Outcome(run_id="run", step_id=f"s{n}", attempt=n, event="success")


async def test_round_trip(address: str) -> None:
    async with (
        open_router(address) as router,
        open_dealer(router.address, identity=b"w1") as dealer,
    ):
        assert isinstance(router, RouterSocket) and isinstance(dealer, DealerSocket)
        if address.startswith("tcp"):
            assert not router.address.endswith(":0")
        with anyio.fail_after(5):
            dealer.send(_invoke(1))
            [(identity, message)] = await router.recv_batch()
            assert identity == b"w1"
            assert message == _invoke(1)
            router.send(identity, _outcome(1))
            assert await dealer.recv_batch() == [_outcome(1)]


async def test_send_many_batches_per_peer_and_keeps_each_peers_order(address: str) -> None:
    async with (
        open_router(address) as router,
        open_dealer(router.address, identity=b"w1") as one,
        open_dealer(router.address, identity=b"w2") as two,
    ):
        with anyio.fail_after(5):
            one.send(Heartbeat())
            two.send(Heartbeat())
            seen: set[bytes] = set()
            while len(seen) < 2:
                seen |= {identity for identity, _ in await router.recv_batch()}
            interleaved = [(b"w1" if n % 2 else b"w2", _invoke(n)) for n in range(10)]
            router.send_many(interleaved + [(b"nobody", _invoke(99))])  # an unknown peer loses only its own
            # One ZeroMQ message per peer: the whole batch is there in the first receive.
            assert await one.recv_batch() == [_invoke(n) for n in range(1, 10, 2)]
            assert await two.recv_batch() == [_invoke(n) for n in range(0, 10, 2)]
            one.send_many([_outcome(n) for n in range(4)])
            got = await router.recv_batch()
            assert got == [(b"w1", _outcome(n)) for n in range(4)]


async def test_send_clients_gives_each_client_its_replies_in_one_message_in_order(address: str) -> None:
    async with (
        open_router(address) as router,
        open_dealer(router.address, identity=b"c1", client=True) as one,
        open_dealer(router.address, identity=b"c2", client=True) as two,
    ):
        with anyio.fail_after(5):
            one.send(Status(run_id="x"))
            two.send(Status(run_id="y"))
            seen: set[bytes] = set()
            while len(seen) < 2:
                seen |= {identity for identity, _ in await router.recv_batch()}
            replies = [SubmitAccepted(run_id=f"r{n}") if n % 3 else RunStatus(run_id=f"r{n}", status="completed")
                       for n in range(7)]
            router.send_clients([(b"c1", reply) for reply in replies] + [(b"c2", replies[0])])
            assert await one.recv_batch() == replies  # one frame set carried them all
            assert await two.recv_batch(1) == [replies[0]]
            # A client reading one reply at a time gets each, in order.
            router.send_clients([(b"c1", reply) for reply in replies])
            assert [(await one.recv_batch(1))[0] for _ in replies] == replies
            router.send_clients([(b"c1", reply) for reply in replies[:3]])
            assert await one.recv_batch(2) == replies[:2] and await one.recv_batch(2) == replies[2:3]


async def test_pump_many_round_trips_without_lost_wakeups(address: str) -> None:
    """Receivers park while other tasks send on the same sockets: the case where a send can
    swallow the edge of the ZMQ_FD that announced an incoming message."""
    total, window = 20_000, 64
    received: list[int] = []
    async with open_router(address) as router, open_dealer(router.address) as dealer:
        to_reply_send, to_reply_receive = anyio.create_memory_object_stream[tuple](window * 2)
        credit = anyio.Semaphore(window)

        async def router_receiver() -> None:
            async with to_reply_send:
                count = 0
                while count < total:
                    for item in await router.recv_batch(max_batch=32):
                        await to_reply_send.send(item)
                        count += 1

        async def router_replier() -> None:
            async with to_reply_receive:
                async for identity, message in to_reply_receive:
                    router.send(identity, _outcome(message.attempt))

        async def dealer_sender() -> None:
            for n in range(total):
                await credit.acquire()
                dealer.send(_invoke(n))

        async def dealer_receiver() -> None:
            while len(received) < total:
                for message in await dealer.recv_batch():
                    received.append(message.attempt)
                    credit.release()

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(router_receiver)
                tg.start_soon(router_replier)
                tg.start_soon(dealer_sender)
                tg.start_soon(dealer_receiver)
    assert received == list(range(total))


async def test_parked_receiver_woken_by_an_edge_without_input_still_gets_the_next_message(address: str) -> None:
    """A peer connecting makes libzmq signal the ROUTER's FD with commands, not input: the
    parked receiver is woken, finds nothing, parks again, and the message sent next reaches it."""
    async with open_router(address) as router:
        got: list = []
        arrived = anyio.Event()

        async def receive() -> None:
            got.extend(await router.recv_batch())
            arrived.set()

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(receive)
                await anyio.lowlevel.checkpoint()  # the receiver is parked
                async with open_dealer(router.address, identity=b"late") as dealer:
                    for _ in range(10):  # let the loop run the FD callback and the woken receiver
                        await anyio.lowlevel.checkpoint()
                    dealer.send(_invoke(7))
                    await arrived.wait()  # before the DEALER closes
        assert got == [(b"late", _invoke(7))]


async def test_a_receiver_woken_as_its_socket_closes_gets_closed_not_a_zmq_error(address: str) -> None:
    """The FD's wake-up reached the parked receiver, then the socket closed before it ran (a
    cluster shutting down): its receive read the closed socket, ZMQError ENOTSOCK. The wake-up is
    delivered by hand here because the loop's order cannot be arranged from outside."""
    async with open_router(address) as router:
        outcome: list[BaseException] = []

        async def receive() -> None:
            try:
                await router.recv_batch()
            except BaseException as exc:  # noqa: BLE001 - what it raised is the assertion
                outcome.append(exc)

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(receive)
                while router._waiter is None:  # parked
                    await anyio.lowlevel.checkpoint()
                router._on_fd_readable()  # the wake-up, as the loop's FD callback sends it
                router._close()  # and the close, before the receiver runs
        assert len(outcome) == 1 and isinstance(outcome[0], anyio.ClosedResourceError), outcome


async def test_garbage_and_wrong_header_are_dropped_and_router_keeps_serving(
    address: str,
) -> None:
    async with open_router(address) as router:
        raw = _raw(zmq.DEALER)
        raw.identity = b"rogue"
        raw.connect(router.address)
        try:
            with capture_logs() as logs:
                raw.send(b"just one frame")
                raw.send_multipart([b"not-our-header", b"body"])
                raw.send_multipart([HEADER, b"\xc1\xc1 not msgpack"])
                raw.send_multipart(to_frames(Heartbeat()))
                with anyio.fail_after(5):
                    batch = await router.recv_batch()
            assert batch == [(b"rogue", Heartbeat())]
            dropped = [e for e in logs if e["event"] == "frame_dropped"]
            assert [(e["peer"], e["frames"]) for e in dropped] == [
                (b"rogue".hex(), 1),
                (b"rogue".hex(), 2),
                (b"rogue".hex(), 2),
            ]
            assert dropped[1]["reason"] == "unknown header frame"
            assert dropped[2]["bytes"] == len(HEADER) + len(b"\xc1\xc1 not msgpack")
            router.send(b"rogue", _outcome(1))
            with anyio.fail_after(5):
                assert await _recv_raw(raw) == to_frames(_outcome(1))
        finally:
            raw.close()


async def test_dealer_drops_garbage_from_a_raw_router(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path / 'raw-router.ipc'}"
    raw = _raw(zmq.ROUTER)
    raw.bind(address)
    try:
        async with open_dealer(address, identity=b"w9") as dealer:
            dealer.send(Heartbeat())
            identity, *_ = await _recv_raw(raw)
            with capture_logs() as logs:
                raw.send_multipart([identity, b"junk"])
                raw.send_multipart([identity, *to_frames(Heartbeat())])
                with anyio.fail_after(5):
                    assert await dealer.recv_batch() == [Heartbeat()]
            assert [(e["event"], e["frames"]) for e in logs] == [("frame_dropped", 1)]
    finally:
        raw.close()


async def test_send_to_unknown_identity_is_logged_and_dropped(address: str) -> None:
    async with (
        open_router(address) as router,
        open_dealer(router.address, identity=b"w1") as dealer,
    ):
        with capture_logs() as logs:
            router.send(b"nobody", _outcome(1))
            router.send_many([(b"nobody", _outcome(2)), (b"ghost", _outcome(3))])
        assert [(e["event"], e["peer"], e["reason"]) for e in logs] == [
            ("send_dropped", b"nobody".hex(), "unknown_peer"),
            ("send_dropped", b"nobody".hex(), "unknown_peer"),
            ("send_dropped", b"ghost".hex(), "unknown_peer"),
        ]
        # The router still serves its real peers.
        dealer.send(Heartbeat())
        with anyio.fail_after(5):
            [(identity, _)] = await router.recv_batch()
            router.send(identity, Heartbeat())
            assert await dealer.recv_batch() == [Heartbeat()]


@pytest.mark.parametrize("scheme", ["ipc", "tcp"])
async def test_oversized_message_is_refused(scheme: str, tmp_path: Path) -> None:
    # libzmq enforces ZMQ_MAXMSGSIZE in its stream decoder (ipc, tcp); inproc has none.
    bind = f"ipc://{tmp_path / 'big.ipc'}" if scheme == "ipc" else "tcp://127.0.0.1:0"
    async with open_router(bind, max_message_bytes=1024) as router:
        big = _raw(zmq.DEALER)
        monitor_address = f"inproc://monitor-{next(_names)}"
        big.monitor(monitor_address, zmq.EVENT_DISCONNECTED)
        monitor = _raw(zmq.PAIR)
        monitor.connect(monitor_address)
        small = _raw(zmq.DEALER)
        small.identity = b"small"
        try:
            big.connect(router.address)
            big.send_multipart([HEADER, b"x" * 4096])
            # The router's decoder refuses the frame and drops the connection.
            event = await _recv_raw(monitor)
            assert parse_monitor_message(event)["event"] == (
                zmq.EVENT_DISCONNECTED
            )
            big.disable_monitor()
            small.connect(router.address)
            small.send_multipart(to_frames(Heartbeat()))
            with anyio.fail_after(5):
                assert await router.recv_batch() == [(b"small", Heartbeat())]
        finally:
            monitor.close()
            big.close()
            small.close()


async def test_bind_conflict_raises_transport_error(address: str) -> None:
    async with open_router(address) as router:
        with pytest.raises(TransportError, match="cannot bind") as info:
            async with open_router(router.address):
                pass
        assert router.address in str(info.value)


async def test_stale_ipc_socket_file_is_removed(tmp_path: Path) -> None:
    import socket

    path = tmp_path / "stale.ipc"
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))
    dead.close()  # the file stays behind, nobody listens
    assert path.exists()
    async with open_router(f"ipc://{path}") as router, open_dealer(router.address) as dealer:
        dealer.send(Heartbeat())
        with anyio.fail_after(5):
            assert len(await router.recv_batch()) == 1


async def test_ipc_path_that_is_not_a_socket_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "file.ipc"
    path.write_text("precious")
    with pytest.raises(TransportError, match="not a socket"):
        async with open_router(f"ipc://{path}"):
            pass
    assert path.read_text() == "precious"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"curve": object()}, "CURVE"),
        ({"max_message_bytes": 0}, "max_message_bytes"),
    ],
)
async def test_invalid_options_raise_transport_error(kwargs: dict, match: str) -> None:
    with pytest.raises(TransportError, match=match):
        async with open_router("inproc://invalid-options", **kwargs):
            pass
    with pytest.raises(TransportError, match=match):
        async with open_dealer("inproc://invalid-options", **kwargs):
            pass


async def test_bad_address_and_identity_raise_transport_error() -> None:
    with pytest.raises(TransportError, match="inproc://, ipc:// or tcp://"):
        async with open_router("udp://127.0.0.1:9"):
            pass
    with pytest.raises(TransportError, match="identity"):
        async with open_dealer("inproc://x", identity=b"\x00reserved"):
            pass


async def test_closed_socket_and_concurrent_receivers() -> None:
    async with open_router(f"inproc://transport-test-{next(_names)}") as router:
        async with anyio.create_task_group() as tg:
            tg.start_soon(router.recv_batch)
            await anyio.wait_all_tasks_blocked()
            with pytest.raises(anyio.BusyResourceError):
                await router.recv_batch()
            tg.cancel_scope.cancel()
    with pytest.raises(anyio.ClosedResourceError):
        await router.recv_batch()
    with pytest.raises(anyio.ClosedResourceError):
        router.send(b"x", Heartbeat())
