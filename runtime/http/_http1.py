"""The HTTP entry speaks HTTP/1.1 only: Hypercorn's cleartext HTTP/2 kept an idle connection for ever.

Hypercorn switches a cleartext connection to HTTP/2 when it opens with HTTP/2's preface (prior
knowledge) or asks ``Upgrade: h2c``, and has no setting to refuse either. Such a connection that
opens no stream is never idle to it (the keep-alive timer stops at the preface and restarts
only when a stream closes), so it stays open for ever: a client that sends 24 bytes per
connection, no token needed, holds file descriptors until the daemon has none left for its
journal and its workers (an HTTP/1.1 connection that says nothing is closed after
``keep_alive_timeout``, 5 s). The chat-completions API and its clients (the ``openai``
package) use HTTP/1.1, so the entry does not switch: the preface is answered as an HTTP/1.1
request (an error, then the connection closes), ``Upgrade: h2c`` is ignored.

Hypercorn builds its HTTP/1.1 protocol by the name ``hypercorn.protocol.H11Protocol``; that
name is pointed at a subclass that never switches (the process's one Hypercorn server is the
entry's).
"""

from __future__ import annotations

from typing import Any

__all__ = ["http1_only"]


def http1_only() -> None:
    """Make Hypercorn's connections stay HTTP/1.1 (idempotent)."""
    import hypercorn.protocol as protocol
    from hypercorn.protocol.h11 import H11Protocol

    if getattr(protocol.H11Protocol, "http1_only", False):
        return

    class Http11Only(H11Protocol):
        """Hypercorn's HTTP/1.1 protocol, without its switch to HTTP/2."""

        http1_only = True

        async def _check_protocol(self, event: Any) -> None:
            """Switch to nothing: an h2c upgrade is ignored, the preface is a request like any."""

    protocol.H11Protocol = Http11Only  # type: ignore[misc]
