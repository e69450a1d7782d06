"""The HTTP entry's HTTP/1.1, as Hypercorn speaks it, with two changes: no switch to HTTP/2,
and a request Hypercorn cannot read is answered in the API's error shape.

Hypercorn switches a cleartext connection to HTTP/2 when it opens with HTTP/2's preface (prior
knowledge) or asks ``Upgrade: h2c``, and has no setting to refuse either. Such a connection that
opens no stream is never idle to it (the keep-alive timer stops at the preface and restarts
only when a stream closes), so it stays open for ever: a client that sends 24 bytes per
connection, no token needed, holds file descriptors until the daemon has none left for its
journal and its workers (an HTTP/1.1 connection that says nothing is closed after
``keep_alive_timeout``, 5 s). The chat-completions API and its clients (the ``openai``
package) use HTTP/1.1, so the entry does not switch: the preface is answered as an HTTP/1.1
request (an error, then the connection closes), ``Upgrade: h2c`` is ignored.

A request Hypercorn refuses before the entry sees it (a malformed request line, header or
chunk, two ``Content-Length``, headers over 16 KiB) was answered with an empty body; an OpenAI
client then reads no message. It gets the entry's error body instead, naming no part of the
request.

Hypercorn builds its HTTP/1.1 protocol by the name ``hypercorn.protocol.H11Protocol``; that
name is pointed at a subclass that changes nothing but for a server whose ``Config`` the entry
marked (``http1_only(config)``): another Hypercorn server in the same process (an application
embedding the runtime) keeps HTTP/2 and its own refusals.
"""

from __future__ import annotations

from itertools import chain
from typing import Any

__all__ = ["http1_only", "protocol_error_body"]


def protocol_error_body(status: int) -> bytes:
    """The API's error body for a request refused with ``status`` before the entry read it."""
    what = "its headers are too large" if status == 431 else "it is not HTTP/1.1 the entry can read"
    return (b'{"error":{"message":"the request was refused before it was read: ' + what.encode()
            + b' (HTTP ' + str(status).encode() + b')","type":"invalid_request_error","param":null,"code":null}}')


#: The attribute that marks the entry's own Hypercorn ``Config``.
ENTRY_MARK = "ontoflow_http_entry"


def http1_only(config: Any) -> None:
    """Make the connections of the server run with ``config`` stay HTTP/1.1 and its refusals
    the API's error body (the process-wide protocol class is replaced once; it changes only
    servers whose config is marked so)."""
    import h11
    import hypercorn.protocol as protocol
    from hypercorn.protocol.h11 import H11Protocol

    setattr(config, ENTRY_MARK, True)
    if getattr(protocol.H11Protocol, "http1_only", False):
        return

    class Http11Only(H11Protocol):
        """Hypercorn's HTTP/1.1 protocol, without its switch to HTTP/2."""

        http1_only = True

        async def _check_protocol(self, event: Any) -> None:
            """Switch to nothing: an h2c upgrade is ignored, the preface is a request like any."""
            if not getattr(self.config, ENTRY_MARK, False):
                await super()._check_protocol(event)

        async def _send_error_response(self, status_code: int) -> None:
            """Hypercorn's refusal of an unreadable request, with the API's error body."""
            if not getattr(self.config, ENTRY_MARK, False):
                await super()._send_error_response(status_code)
                return
            body = protocol_error_body(status_code)
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                       (b"connection", b"close")]
            await self._send_h11_event(h11.Response(status_code=status_code,
                                                    headers=list(chain(headers, self.config.response_headers("h11")))))
            await self._send_h11_event(h11.Data(data=body))
            await self._send_h11_event(h11.EndOfMessage())

    protocol.H11Protocol = Http11Only  # type: ignore[misc]
