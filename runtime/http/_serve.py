"""Serving the HTTP entry with Hypercorn, inside the caller's task group.

The socket is bound here (so ``:0`` picks a free port and the real address is reported
through ``task_status``) and handed to Hypercorn by file descriptor. Hypercorn runs with a
shutdown trigger, so it installs no signal handlers of its own: the daemon keeps its SIGTERM
drain. Cancelling the task stops the server.

Security: a loopback address needs no token; any other address refuses to start without one
(a chat entry on the network without a key would run anybody's requests).
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Annotated, Any

import anyio
import msgspec
import structlog
from anyio.abc import TaskStatus

from ontoflow.runtime.errors import ConfigError
from ontoflow.runtime.http._app import MAX_TURNS, MAX_TURNS_PER_CLIENT, create_app
from ontoflow.runtime.http._connections import (
    MAX_CONNECTIONS,
    MAX_CONNECTIONS_PER_CLIENT,
    bound_connections,
    within_fd_limit,
)
from ontoflow.runtime.http._conversations import ConversationBook
from ontoflow.runtime.http._http1 import http1_only
from ontoflow.runtime.http._reply import Answerer

__all__ = ["HttpEntryConfig", "needs_token", "parse_bind", "serve_http_entry"]

log = structlog.get_logger()


class HttpEntryConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Where and how the HTTP entry serves.

    Attributes:
        bind: ``HOST:PORT`` (``127.0.0.1:8080``, ``[::1]:0``; port 0 picks a free one).
        token: the bearer token clients must send; required on a non-loopback address.
        model: the model id ``/v1/models`` lists.
        body_timeout_s: how long a request's body may take to arrive (then 408).
        keepalive_s: how often a streamed answer sends ``: keep-alive`` until the answer (under
            a proxy's idle timeout: nginx's is 60 s).
        max_turns: how many chat requests are worked on at once (one more is a 429).
        max_turns_per_client: how many of them from one client address (one more is a 429 for
            that client: one client cannot take every turn; clients behind one proxy share it).
        max_connections: how many TCP connections are held open at once (one more is answered
            503 and closed at once: ``_connections``; idle connections held descriptors unbounded);
            at most half the process's file descriptor limit (lowered, with a warning).
        max_connections_per_client: how many of them from one client address.
        idle_timeout_s: how long a connection may stay open without a whole request's headers
            (having sent nothing, or between requests) before it is closed.
    """

    bind: str = "127.0.0.1:8080"
    token: str | None = None
    model: str = "ontoflow"
    body_timeout_s: float = 30.0
    keepalive_s: Annotated[float, msgspec.Meta(gt=0)] = 15.0
    max_turns: Annotated[int, msgspec.Meta(ge=1)] = MAX_TURNS
    max_turns_per_client: Annotated[int, msgspec.Meta(ge=1)] = MAX_TURNS_PER_CLIENT
    max_connections: Annotated[int, msgspec.Meta(ge=1)] = MAX_CONNECTIONS
    max_connections_per_client: Annotated[int, msgspec.Meta(ge=1)] = MAX_CONNECTIONS_PER_CLIENT
    idle_timeout_s: Annotated[float, msgspec.Meta(gt=0)] = 5.0


def parse_bind(bind: str) -> tuple[str, int]:
    """``(host, port)`` of ``HOST:PORT`` (IPv6 hosts in brackets).

    Raises:
        ConfigError: naming the address when it is not ``HOST:PORT`` with a port in 0-65535.
    """
    host, sep, port = bind.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"--http-bind {bind!r}: expected HOST:PORT, e.g. 127.0.0.1:8080")
    return host, int(port)


def needs_token(bind: str) -> bool:
    """Whether the HTTP entry at ``bind`` (``HOST:PORT``) is off loopback, so needs a token.

    Raises:
        ConfigError: naming the address when it is not ``HOST:PORT`` (``parse_bind``).
    """
    return not _is_loopback(parse_bind(bind)[0])


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        raise ConfigError(f"--http-bind {host}:{port}: cannot bind: {exc.strerror}") from None
    return sock


async def serve_http_entry(
    config: HttpEntryConfig,
    answer: Answerer,
    *,
    conversations: ConversationBook | None = None,
    task_status: TaskStatus[str] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the chat-completions API until cancelled; reports ``http://HOST:PORT`` once bound.

    ``conversations`` is the session book (``create_app``'s; a fresh one when None).

    Raises:
        ConfigError: when the address is invalid or cannot be bound, or a non-loopback address
            has no token.
    """
    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    host, port = parse_bind(config.bind)
    if config.token is None and not _is_loopback(host):
        raise ConfigError(f"--http-bind {config.bind}: a non-loopback address needs a bearer token (--http-token-file FILE)")
    if config.token is not None and not config.token.strip():
        raise ConfigError("the HTTP entry's token is empty")
    sock = _bind(host, port)
    try:
        real_host, real_port = sock.getsockname()[:2]
        shown = f"[{real_host}]" if ":" in real_host else real_host
        address = f"http://{shown}:{real_port}"
        hyper = Config()
        hyper.bind = [f"fd://{sock.detach()}"]  # Hypercorn's from here on: it closes it
        hyper.accesslog = None
        hyper.errorlog = None
        hyper.graceful_timeout = 1.0
        hyper.keep_alive_timeout = config.idle_timeout_s
        # Hypercorn has no bound of its own on connections (_connections)
        bound_connections(hyper, within_fd_limit(config.max_connections), config.max_connections_per_client)
        http1_only(hyper)  # HTTP/2 without a stream was never idle to Hypercorn: kept open for ever (_http1)
        stopped = anyio.Event()
        app: Any = create_app(answer, token=config.token, model=config.model, conversations=conversations,
                              body_timeout_s=config.body_timeout_s, keepalive_s=config.keepalive_s,
                              max_turns=config.max_turns, max_turns_per_client=config.max_turns_per_client)

        async def run_server() -> None:
            # Shielded: a cancelled caller sets ``stopped`` and Hypercorn closes its connections
            # itself (cancelling it mid-connection leaves asyncio callbacks failing).
            with anyio.CancelScope(shield=True):
                await serve(app, hyper, shutdown_trigger=stopped.wait)

        log.info("http_entry_started", address=address, token=config.token is not None)
        async with anyio.create_task_group() as tg:
            tg.start_soon(run_server)
            task_status.started(address)
            try:
                await anyio.sleep_forever()
            finally:
                stopped.set()
                log.info("http_entry_stopped", address=address)
    finally:
        sock.close()
