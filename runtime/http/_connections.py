"""How many TCP connections the HTTP entry holds open at once: in all, and from each client.

Hypercorn accepts every connection it is offered and has no bound of its own: a client that
opened thousands of connections and sent nothing on them held a file descriptor each (for
``keep_alive_timeout``, then opened them again), until the daemon had none left for its
journal, its workers' sockets or its own model calls. The entry's turns are bounded
(``_slots``) but a connection that never sends a request is no turn.

So the entry holds at most ``max_connections`` connections, and at most
``max_connections_per_client`` from one address (the same share as the turns': clients behind
one proxy, or on one machine's loopback, are one address; an IPv6 /64 is one: ``client_of``). A connection past either bound is
answered at once with a 503 in the API's error body (``connection: close``; an OpenAI client
retries it) and closed: its file descriptor lives for the few microseconds that takes, so the
daemon's descriptors stay bounded by the bound plus the listen backlog's kernel queue (which
holds no descriptor). A connection that sends nothing, or not a whole request's headers, is
closed after ``keep_alive_timeout`` (Hypercorn's idle timer runs from the connection's opening
until a request's headers are complete); one the client closes is closed (and its slot given
back) as soon as its end is read, not when that timer fires.

Hypercorn builds each connection's server by the name ``hypercorn.asyncio.run.TCPServer``; that
name is pointed at a subclass that changes nothing but for a server whose ``Config`` the entry
gave its bound (``bound_connections(config, ...)``), as ``_http1`` does for the protocol.
"""

from __future__ import annotations

from typing import Any

import structlog

from ontoflow.runtime.http._slots import TurnSlots, client_of
from ontoflow.runtime.log_budget import at_doubling

__all__ = ["MAX_CONNECTIONS", "MAX_CONNECTIONS_PER_CLIENT", "bound_connections", "within_fd_limit"]

log = structlog.get_logger()

#: How many connections the entry holds open at once by default: well under a process's usual
#: 1024 descriptors (the daemon's journal, workers and model calls need theirs), and four times
#: the entry's default turns, so keep-alive connections of idle clients do not crowd out turns.
MAX_CONNECTIONS = 256

#: How many of them one client address holds by default: a quarter, so one client's
#: connections leave the rest to at least three others.
MAX_CONNECTIONS_PER_CLIENT = 64

#: The attribute of the entry's Hypercorn ``Config`` holding its connection slots.
_SLOTS = "ontoflow_http_connections"

_FULL_BODY = (b'{"error":{"message":"the entry holds as many connections as it may; retry later",'
              b'"type":"server_error","param":null,"code":"too_many_connections"}}')
_FULL = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n"
         b"connection: close\r\ncontent-length: " + str(len(_FULL_BODY)).encode() + b"\r\n\r\n" + _FULL_BODY)


def within_fd_limit(wanted: int) -> int:
    """``wanted`` connections, or half the process's file descriptors (``RLIMIT_NOFILE``'s soft
    limit) when that is fewer, logged as ``http_max_connections_lowered``: a bound past the
    limit bounds nothing, and the other half is the journal's, the workers' and the model's."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or wanted <= soft // 2:
        return wanted
    lowered = max(1, soft // 2)
    log.warning("http_max_connections_lowered", max_connections=lowered, configured=wanted, fd_limit=soft)
    return lowered


def bound_connections(config: Any, total: int, per_client: int) -> TurnSlots:
    """Bound the connections the server run with Hypercorn ``config`` holds open to ``total``
    (``per_client`` from one address); the process-wide server class is replaced once, and
    changes only servers whose config is bound so. Returns the slots (``working``: how many
    are open).

    Raises:
        ValueError: when either bound is below 1.
    """
    import hypercorn.asyncio.run as run
    from hypercorn.asyncio.tcp_server import TCPServer

    slots = TurnSlots(total, per_client)
    setattr(config, _SLOTS, slots)
    if getattr(run.TCPServer, "bounded", False):
        return slots
    refusals: dict[str, int] = {}

    class BoundedTCPServer(TCPServer):
        """Hypercorn's connection, refused at once past its config's bound."""

        bounded = True

        async def run(self) -> None:
            """Serve the connection if a slot is free, else answer 503 and close it."""
            held: TurnSlots | None = getattr(self.config, _SLOTS, None)
            if held is None:
                await super().run()
                return
            peer = self.writer.get_extra_info("peername")
            client = client_of(str(peer[0])) if isinstance(peer, tuple) and peer else ""
            full = held.take(client)
            if full is None:
                try:
                    await super().run()
                finally:
                    held.give_back(client)
                return
            if count := at_doubling(refusals, full):
                log.warning("http_connection_refused", bound=full, count=count, open=held.working, client=client)
            try:
                self.writer.write(_FULL)
                self.writer.close()  # the transport flushes what it holds, then closes
            except (OSError, RuntimeError):  # the client is gone already: nothing to answer
                self.writer.transport.abort()

        async def _read_data(self) -> None:
            """Read until the client closes, then close at once: Hypercorn left a connection the
            client closed between requests open (its descriptor and its slot) until the idle
            timer fired, as if the client could still send."""
            await super()._read_data()
            if getattr(self.config, _SLOTS, None) is not None:
                await self._close()

    run.TCPServer = BoundedTCPServer  # type: ignore[misc]
    return slots
