"""The ZeroMQ transport: an orchestrator's bound ROUTER and a worker's connected DEALER.

All ZeroMQ use of the runtime lives in this module. One code path serves ``inproc://``,
``ipc://`` and ``tcp://``; frames are those of ``runtime.codec`` (a ROUTER adds the peer's
identity in front).

Why no ``zmq.asyncio.Socket``: its per-call Futures cost more than the whole per-step budget
allows. Each socket here is a plain (synchronous) pyzmq socket used only with ``NOBLOCK``;
the event loop watches the socket's ``ZMQ_FD`` and a receiver parks on a bare asyncio Future
only when nothing is queued. ``ZMQ_FD`` is edge-triggered: any call into libzmq on the socket
(a send included) may consume the edge that announced an incoming message, so after every
send a parked receiver is woken if ``ZMQ_EVENTS`` shows ``POLLIN``, and a receiver checks
``ZMQ_EVENTS`` before it parks. The Context is a ``zmq.asyncio.Context`` so that code which
does use zmq.asyncio sockets can share it (``inproc://`` needs both ends on one context).

Security: with ``curve=`` a ROUTER serves CURVE (every connection encrypted; the ZAP
authenticator of ``runtime.curve`` must run on its context, and admits only authorised keys)
and a DEALER connects with its key pair and the server's public key. Binding a non-loopback
``tcp://`` address without CURVE is refused unless ``insecure=True``, which logs a warning.
The ROUTER sets ``ROUTER_HANDOVER``: a worker that reconnects with a fresh socket under the
same identity takes the identity over from its half-dead old connection. It also carries the
client API (``protocols.client``): frames with the client header decode to client messages.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import os
import socket
import stat
from collections.abc import AsyncIterator, Iterable
from typing import Any
from contextlib import asynccontextmanager

import anyio
import structlog
import zmq
import zmq.asyncio
from anyio.lowlevel import checkpoint

from protocols.client import CLIENT_HEADER, ClientMessage, client_from_frames, client_to_frames
from protocols.errors import ProtocolError
from protocols.messages import WireMessage
from runtime.codec import HEADER, encode, from_frames, pack
from runtime.curve import ZAP_DOMAIN, CurveClient, CurveServer, authenticator_running
from runtime.errors import TransportError

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DealerSocket",
    "RouterSocket",
    "is_loopback",
    "open_dealer",
    "open_router",
    "shared_context",
]

log = structlog.get_logger()

#: Default ceiling of one incoming message; libzmq drops a peer that sends a bigger one.
DEFAULT_MAX_MESSAGE_BYTES = 64 * 2**20

_SCHEMES = ("inproc://", "ipc://", "tcp://")
# Plain ints, not pyzmq's enums: flag arithmetic on an IntFlag goes through enum.__call__,
# which costs microseconds per message on the hot path.
_NOBLOCK = int(zmq.NOBLOCK)
_SNDMORE_NOBLOCK = int(zmq.SNDMORE) | int(zmq.NOBLOCK)
_POLLIN = int(zmq.POLLIN)
_EVENTS = int(zmq.EVENTS)
_RCVMORE = int(zmq.RCVMORE)


def _recv_frames(sock: zmq.Socket) -> list[bytes]:
    """Receive one whole multipart message without blocking.

    pyzmq's ``recv_multipart`` sugar, and every ``getsockopt`` (RCVMORE included), convert
    flags through enums at a cost of microseconds per call; a frame's own ``more`` flag is
    free, so frames are read one by one as ``zmq.Frame``.

    Raises:
        zmq.Again: when no message is queued.
    """
    frames: list[bytes] = []
    while True:
        frame = sock.recv(_NOBLOCK, copy=False)
        frames.append(frame.bytes)
        if not frame.more:
            return frames


def shared_context() -> zmq.asyncio.Context:
    """Return the process-wide ZeroMQ context (never terminated by this module)."""
    return zmq.asyncio.Context.instance()


class _Endpoint:
    """What a ROUTER and a DEALER share: the socket, readiness and the wake-up rules."""

    __slots__ = ("_fd", "_loop", "_pending", "_sock", "_waiter", "address")

    def __init__(self, sock: zmq.Socket, address: str, loop: asyncio.AbstractEventLoop) -> None:
        self._sock = sock
        self._loop = loop
        self._waiter: asyncio.Future[None] | None = None
        self._pending: list = []
        self._fd: int = sock.get(zmq.FD)
        self.address = address
        # Registered for the socket's whole life: one epoll_ctl, not one per wait.
        loop.add_reader(self._fd, self._on_fd_readable)

    def _on_fd_readable(self) -> None:
        # Reading ZMQ_EVENTS makes libzmq process its command queue, which also clears the FD;
        # it must happen even with no receiver parked, or the level-triggered loop would spin.
        try:
            events = self._sock.get(_EVENTS)
        except zmq.ZMQError:
            return
        if events & _POLLIN:
            self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _after_send(self) -> None:
        # The send may have swallowed the FD edge of a message that arrived meanwhile.
        if self._waiter is not None and self._sock.get(_EVENTS) & _POLLIN:
            self._wake()

    async def _receive(self, max_batch: int) -> list:
        """The receive loop shared by both socket kinds (``_drain`` differs)."""
        if self._sock.closed:
            raise anyio.ClosedResourceError
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        batch = self._pending or self._drain(max_batch, False)
        if batch:
            # Ready without waiting: still yield once, so a flooded socket cannot starve the
            # other tasks. The batch is parked meanwhile: a cancellation here loses nothing,
            # the next call returns it.
            self._pending = batch
            await checkpoint()
            self._pending = []
            return batch
        while True:
            # The drain above ended with ZMQ_EVENTS showing no input, which re-arms the FD.
            await self._park()
            batch = self._drain(max_batch, True)
            if batch:
                return batch

    async def _park(self) -> None:
        if self._waiter is not None:
            raise anyio.BusyResourceError("receiving from")
        waiter = self._loop.create_future()
        self._waiter = waiter
        try:
            await waiter
        finally:
            self._waiter = None

    def _drain(self, max_batch: int, known_ready: bool) -> list:
        """Read what is queued, up to ``max_batch`` frame sets, decoding each with ``_decode``;
        a frame set that does not decode is logged and skipped."""
        sock = self._sock
        batch: list = []
        # Asking ZMQ_EVENTS is cheaper than a receive that fails with EAGAIN (an exception).
        ready = known_ready or sock.get(_EVENTS) & _POLLIN
        for _ in range(max_batch):
            if not ready:
                break
            try:
                frames = _recv_frames(sock)
            except zmq.Again:
                break
            try:
                batch += self._decode(frames)
            except ProtocolError as exc:
                self._log_dropped_frames(*self._peer_of(frames), exc)
            ready = sock.get(_EVENTS) & _POLLIN
        return batch

    def _decode(self, frames: list[bytes]) -> list:
        """The received items of one frame set (a batch body yields several, in order)."""
        raise NotImplementedError

    @staticmethod
    def _peer_of(frames: list[bytes]) -> tuple[bytes | None, list[bytes]]:
        """Split a frame set into the sending peer (None on a DEALER) and the message frames."""
        return None, frames

    def _close(self) -> None:
        if self._sock.closed:
            return
        self._loop.remove_reader(self._fd)
        self._sock.close(linger=0)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(anyio.ClosedResourceError())

    def _log_dropped_frames(self, peer: bytes | None, frames: list[bytes], exc: Exception) -> None:
        log.warning(
            "frame_dropped",
            address=self.address,
            peer=peer.hex() if peer is not None else None,
            frames=len(frames),
            bytes=sum(len(f) for f in frames),
            reason=str(exc),
        )

    def _log_send_failure(
        self, peer: bytes | None, message: WireMessage, exc: zmq.ZMQError
    ) -> None:
        if exc.errno == zmq.ENOTSOCK or self._sock.closed:
            raise anyio.ClosedResourceError from None
        if exc.errno == zmq.EHOSTUNREACH:
            reason = "unknown_peer"
        elif exc.errno == zmq.EAGAIN:
            reason = "high_water_mark"
        else:
            reason = errno.errorcode.get(exc.errno, str(exc.errno))
        log.warning(
            "send_dropped",
            address=self.address,
            peer=peer.hex() if peer is not None else None,
            op=type(message).__name__,
            reason=reason,
        )


class RouterSocket(_Endpoint):
    """An orchestrator's bound ROUTER. Obtain one with ``open_router``.

    Attributes:
        address: the bound address, with the real port when bound to port 0 or ``*``.
    """

    __slots__ = ()

    async def recv_batch(self, max_batch: int = 512) -> list[tuple[bytes, WireMessage]]:
        """Wait for at least one valid message, then return every message already queued.

        A frame set that does not decode is logged as ``frame_dropped`` and skipped.

        Args:
            max_batch: the most frame sets read in one call (valid or not).

        Returns:
            ``(peer identity, message)`` pairs in arrival order; never empty.

        Raises:
            anyio.ClosedResourceError: when the socket is closed.
            anyio.BusyResourceError: when another task is already receiving.
        """
        return await self._receive(max_batch)

    def _decode(self, frames: list[bytes]) -> list[tuple[bytes, Any]]:
        identity = frames[0]
        if len(frames) == 3 and frames[1] == CLIENT_HEADER:
            return [(identity, client_from_frames(frames[1:]))]
        return [(identity, message) for message in from_frames(frames[1:])]

    @staticmethod
    def _peer_of(frames: list[bytes]) -> tuple[bytes | None, list[bytes]]:
        return frames[0], frames[1:]

    def send(self, identity: bytes, message: WireMessage) -> None:
        """Send ``message`` to the peer ``identity`` without blocking.

        When the peer is unknown (gone, or never connected) or its queue is full, the message
        is logged as ``send_dropped`` and dropped.

        Raises:
            anyio.ClosedResourceError: when the socket is closed.
        """
        self._send_one(identity, message)
        self._after_send()

    def send_client(self, identity: bytes, message: ClientMessage) -> None:
        """Send a client API reply to the client ``identity``; behaves as ``send``."""
        sock = self._sock
        header, body = client_to_frames(message)
        try:
            sock.send(identity, _SNDMORE_NOBLOCK)
        except zmq.ZMQError as exc:
            self._log_send_failure(identity, message, exc)
            return
        sock.send(header, _SNDMORE_NOBLOCK)
        sock.send(body, _NOBLOCK)
        self._after_send()

    def send_many(self, items: Iterable[tuple[bytes, WireMessage]]) -> None:
        """Send several ``(identity, message)`` pairs, the messages of each peer in order and
        in as few ZeroMQ messages as ``runtime.codec.pack`` makes (a ``Batch`` per peer).

        A peer that is unknown or whose queue is full loses what was for it, logged as
        ``send_dropped`` (as ``send``); the other peers get theirs.
        """
        per_peer: dict[bytes, list[WireMessage]] = {}
        for identity, message in items:
            queued = per_peer.get(identity)
            if queued is None:
                per_peer[identity] = [message]
            else:
                queued.append(message)
        for identity, messages in per_peer.items():
            for body in pack(messages):
                if not self._send_body(identity, body, messages[0]):
                    break
        self._after_send()

    def _send_one(self, identity: bytes, message: WireMessage) -> None:
        self._send_body(identity, encode(message), message)

    def _send_body(self, identity: bytes, body: bytes, message: WireMessage) -> bool:
        sock = self._sock
        try:
            # ROUTER_MANDATORY makes an unknown identity fail on this first frame, so a
            # message is either wholly queued or not at all.
            sock.send(identity, _SNDMORE_NOBLOCK)
        except zmq.ZMQError as exc:
            self._log_send_failure(identity, message, exc)
            return False
        sock.send(HEADER, _SNDMORE_NOBLOCK)
        sock.send(body, _NOBLOCK)
        return True


class DealerSocket(_Endpoint):
    """A worker's (or, with ``client=True``, a client's) connected DEALER. Obtain one with
    ``open_dealer``; a client DEALER sends and receives ``protocols.client`` messages.

    Attributes:
        address: the address connected to.
    """

    __slots__ = ("_client",)

    async def recv_batch(self, max_batch: int = 512) -> list[WireMessage]:
        """Wait for at least one valid message, then return every message already queued.

        A frame set that does not decode is logged as ``frame_dropped`` and skipped.

        Raises:
            anyio.ClosedResourceError: when the socket is closed.
            anyio.BusyResourceError: when another task is already receiving.
        """
        return await self._receive(max_batch)

    def _decode(self, frames: list[bytes]) -> list:
        return [client_from_frames(frames)] if self._client else from_frames(frames)

    def send(self, message: WireMessage) -> None:
        """Send ``message`` to the connected peer without blocking.

        When the outgoing queue is full (the peer is slow or not there), the message is
        logged as ``send_dropped`` and dropped.

        Raises:
            anyio.ClosedResourceError: when the socket is closed.
        """
        if self._client:
            header, body = client_to_frames(message)
        else:
            header, body = HEADER, encode(message)
        self._send_body(header, body, message)
        self._after_send()

    def send_many(self, messages: list[WireMessage]) -> None:
        """Send ``messages`` in order, in as few ZeroMQ messages as ``runtime.codec.pack``
        makes; behaves as ``send`` otherwise (a worker's socket only, not a client's).

        Raises:
            anyio.ClosedResourceError: when the socket is closed.
        """
        if not messages:
            return
        for body in pack(messages):
            if not self._send_body(HEADER, body, messages[0]):
                break
        self._after_send()

    def _send_body(self, header: bytes, body: bytes, message: WireMessage) -> bool:
        sock = self._sock
        try:
            sock.send(header, _SNDMORE_NOBLOCK)
        except zmq.ZMQError as exc:
            self._log_send_failure(None, message, exc)
            return False
        sock.send(body, _NOBLOCK)
        return True


@asynccontextmanager
async def open_router(
    address: str,
    *,
    context: zmq.asyncio.Context | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    curve: CurveServer | None = None,
    insecure: bool = False,
) -> AsyncIterator[RouterSocket]:
    """Bind a ROUTER to ``address`` and close it on exit.

    Args:
        address: ``inproc://name``, ``ipc:///path`` (a stale socket file left by a dead
            process is removed) or ``tcp://host:port`` (port ``0`` or ``*`` picks a free one;
            read the real one from ``RouterSocket.address``).
        context: the ZeroMQ context; ``shared_context()`` by default.
        max_message_bytes: a peer that sends a bigger message is disconnected by libzmq.
        curve: serve CURVE with this key pair; ``runtime.curve.open_authenticator`` must be
            running on the context (it decides who gets in).
        insecure: allow a non-loopback ``tcp://`` address without CURVE (logs a warning).

    Raises:
        TransportError: when the address is invalid or in use, the socket cannot be
            configured, CURVE is asked without an authenticator, or a non-loopback address
            is bound without CURVE and without ``insecure`` (the address is named).
    """
    loop = _check_options(address, max_message_bytes, curve, CurveServer)
    ctx = context if context is not None else shared_context()
    if curve is None and not is_loopback(address):
        if not insecure:
            raise TransportError(f"{address} is not a loopback address: serve it with CURVE, or pass insecure")
        log.warning("insecure_bind", address=address, reason="non-loopback address without CURVE")
    if curve is not None and not authenticator_running(ctx):
        raise TransportError(f"{address}: CURVE needs the ZAP authenticator running on the context")
    sock = _new_socket(ctx, zmq.ROUTER, address, max_message_bytes)
    try:
        sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
        sock.setsockopt(zmq.ROUTER_HANDOVER, 1)
        if curve is not None:
            try:
                sock.setsockopt(zmq.ZAP_DOMAIN, ZAP_DOMAIN)
                sock.setsockopt(zmq.CURVE_SERVER, 1)
                sock.setsockopt(zmq.CURVE_SECRETKEY, curve.keys.secret)
            except zmq.ZMQError as exc:
                raise TransportError(f"cannot configure CURVE for {address}: {exc.strerror}") from None
        if address.startswith("ipc://"):
            _remove_stale_ipc(address)
        try:
            sock.bind(address)
        except zmq.ZMQError as exc:
            raise TransportError(f"cannot bind {address}: {exc.strerror}") from None
        router = RouterSocket(sock, sock.get(zmq.LAST_ENDPOINT).decode(), loop)
    except BaseException:
        sock.close(linger=0)
        raise
    try:
        yield router
    finally:
        router._close()


@asynccontextmanager
async def open_dealer(
    address: str,
    *,
    identity: bytes | None = None,
    context: zmq.asyncio.Context | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    curve: CurveClient | None = None,
    client: bool = False,
) -> AsyncIterator[DealerSocket]:
    """Connect a DEALER to ``address`` and close it on exit.

    The connection is made in the background (and remade after a loss) by libzmq; messages
    sent before it is up are queued.

    Args:
        address: the ROUTER's address (``inproc://``, ``ipc://`` or ``tcp://``).
        identity: the routing identity the ROUTER will see (1 to 255 bytes, not starting
            with a zero byte); libzmq picks one when ``None``.
        context: the ZeroMQ context; ``shared_context()`` by default.
        max_message_bytes: a bigger incoming message makes libzmq drop the connection.
        curve: connect with CURVE (this key pair, that server key); ``None`` for none.
        client: speak the client API (``protocols.client``) instead of the worker protocol.

    Raises:
        TransportError: when the address or identity is invalid, or the socket cannot be
            configured (the address is named).
    """
    loop = _check_options(address, max_message_bytes, curve, CurveClient)
    if identity is not None and (
        not isinstance(identity, bytes) or not 1 <= len(identity) <= 255 or identity[0] == 0
    ):
        raise TransportError(
            f"dealer for {address}: identity must be 1 to 255 bytes not starting with 0"
        )
    sock = _new_socket(context, zmq.DEALER, address, max_message_bytes)
    try:
        if identity is not None:
            sock.setsockopt(zmq.ROUTING_ID, identity)
        if curve is not None:
            try:
                sock.setsockopt(zmq.CURVE_SERVERKEY, curve.server_public)
                sock.setsockopt(zmq.CURVE_PUBLICKEY, curve.keys.public)
                sock.setsockopt(zmq.CURVE_SECRETKEY, curve.keys.secret)
            except zmq.ZMQError as exc:
                raise TransportError(f"cannot configure CURVE for {address}: {exc.strerror}") from None
        try:
            sock.connect(address)
        except zmq.ZMQError as exc:
            raise TransportError(f"cannot connect to {address}: {exc.strerror}") from None
        dealer = DealerSocket(sock, address, loop)
        dealer._client = client
    except BaseException:
        sock.close(linger=0)
        raise
    try:
        yield dealer
    finally:
        dealer._close()


def is_loopback(address: str) -> bool:
    """Whether ``address`` stays on this machine: ``inproc://``, ``ipc://`` or loopback TCP.

    ``tcp://*`` and ``tcp://0.0.0.0`` bind every interface, so they are not loopback.
    """
    if not address.startswith("tcp://"):
        return True
    host = address[len("tcp://") :].rsplit(":", 1)[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # an interface name or a host name: cannot tell, so not loopback


def _check_options(
    address: str, max_message_bytes: int, curve: object | None, curve_kind: type
) -> asyncio.AbstractEventLoop:
    if not isinstance(address, str) or not address.startswith(_SCHEMES):
        raise TransportError("address must start with inproc://, ipc:// or tcp://")
    if curve is not None and not isinstance(curve, curve_kind):
        raise TransportError(f"{address}: CURVE settings must be a {curve_kind.__name__}, got {type(curve).__name__}")
    if not isinstance(max_message_bytes, int) or max_message_bytes < 1:
        raise TransportError(f"{address}: max_message_bytes must be a positive int")
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        raise TransportError(f"{address}: the transport needs anyio's asyncio backend") from None


def _new_socket(
    context: zmq.Context | None, kind: int, address: str, max_message_bytes: int
) -> zmq.Socket:
    ctx = context if context is not None else shared_context()
    try:
        # A plain socket on the (asyncio) context: see the module docstring for why.
        sock: zmq.Socket = zmq.Socket(ctx, kind)
    except zmq.ZMQError as exc:
        raise TransportError(f"cannot create a socket for {address}: {exc.strerror}") from None
    try:
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.MAXMSGSIZE, max_message_bytes)
    except zmq.ZMQError as exc:
        sock.close(linger=0)
        raise TransportError(f"cannot configure the socket for {address}: {exc.strerror}") from None
    return sock


def _remove_stale_ipc(address: str) -> None:
    """Remove the socket file of ``address`` if no process listens on it any more.

    libzmq itself would unlink the file and so silently steal the address from a live
    orchestrator; probing first turns that into a bind conflict.
    """
    path = address[len("ipc://") :]
    if not path or path.startswith("@") or path == "*":
        return  # abstract namespace or a generated name: no file
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise TransportError(f"cannot bind {address}: {exc.strerror}") from None
    if not stat.S_ISSOCK(mode):
        raise TransportError(f"cannot bind {address}: the path exists and is not a socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.setblocking(False)
    try:
        probe.connect(path)
    except ConnectionRefusedError:
        os.unlink(path)
        log.info("ipc_stale_socket_removed", address=address)
        return
    except BlockingIOError:
        pass  # a full backlog: someone is listening
    finally:
        probe.close()
    raise TransportError(f"cannot bind {address}: address in use")
