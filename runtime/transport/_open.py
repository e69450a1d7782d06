"""Opening sockets: address checks, socket options, CURVE, stale ipc files, the context."""

from __future__ import annotations

import asyncio
import ctypes
import ipaddress
import os
import socket
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import structlog
import zmq
import zmq.asyncio

from ontoflow.runtime.curve import ZAP_DOMAIN, CurveClient, CurveServer, authenticator_running
from ontoflow.runtime.errors import TransportError
from ontoflow.runtime.transport._endpoint import DEFAULT_MAX_MESSAGE_BYTES
from ontoflow.runtime.transport._sockets import DealerSocket, RouterSocket

__all__ = ["is_loopback", "open_dealer", "open_router", "shared_context"]

log = structlog.get_logger()

_SCHEMES = ("inproc://", "ipc://", "tcp://")


def shared_context() -> zmq.asyncio.Context:
    """Return the process-wide ZeroMQ context (never terminated by this module)."""
    return zmq.asyncio.Context.instance()


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
    _seed_routing_ids()
    sock = _new_socket(ctx, zmq.ROUTER, address, max_message_bytes)
    try:
        sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
        # No ROUTER_HANDOVER: with it, anyone connecting under a live worker's identity took
        # its route over (and received its next Invoke); see the package docstring.
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
        if curve is not None:
            router.with_user_ids()
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
        dealer = DealerSocket(sock, address, loop, client=client)
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


def _seed_routing_ids() -> None:
    """Seed the C library's ``rand()`` from the operating system before a ROUTER is made.

    libzmq numbers the peers that give no routing identity ``\\x00`` + a 32-bit counter that
    starts at ``rand()``'s next value, which nothing seeds: 0x6b8b4567 in every process. A peer
    may claim any identity, one of those too, and when the counter reaches an identity taken
    libzmq aborts the process (an assertion: ``socket_base.cpp``). A client claiming the next
    numbers killed a fresh daemon at the next connection of anyone. Seeded, the numbers cannot
    be known from outside: a squatter must hold about 2**32 / its connections claims to hit
    one by chance (under CURVE only an authorised key gets that far). Best effort: a C library
    that cannot be reached leaves libzmq as it was.
    """
    try:
        ctypes.CDLL(None).srand(ctypes.c_uint(int.from_bytes(os.urandom(4), "little")))
    except (OSError, AttributeError, TypeError):  # no C library by that name on this platform
        log.info("routing_ids_not_seeded", reason="the C library's srand cannot be reached")


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
        if address.startswith("tcp://") and "[" in address:
            # An IPv6 literal: ZeroMQ refuses it ("No such device") unless told. Only then:
            # with it on, a name such as ``localhost`` may resolve to ::1 and miss a daemon bound
            # on 127.0.0.1, so IPv4 addresses keep ZeroMQ's default.
            sock.setsockopt(zmq.IPV6, 1)
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
