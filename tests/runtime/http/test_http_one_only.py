"""The HTTP entry speaks HTTP/1.1 only, and a request Hypercorn cannot read gets the API's error body
(it was empty). Before, Hypercorn switched a cleartext connection to
HTTP/2 on its preface (or ``Upgrade: h2c``), and an HTTP/2 connection that opened no stream
was never closed: 24 bytes per connection, no token, held a file descriptor of the daemon for
ever (an HTTP/1.1 connection that says nothing is closed after 5 s)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from functools import partial

import anyio
import msgspec
import pytest

from ontoflow.runtime.http import HttpEntryConfig, Reply, serve_http_entry

pytestmark = pytest.mark.anyio

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # an empty SETTINGS frame, as every HTTP/2 client sends


async def _answer(session_id: str, text: str, *, channel: str, run: bool = False) -> Reply:
    return Reply(text="answered")


@pytest.fixture
async def address() -> AsyncIterator[tuple[str, int]]:
    async with anyio.create_task_group() as tg:
        url = await tg.start(serve_http_entry, HttpEntryConfig(bind="127.0.0.1:0", token="tok-h2"), _answer)
        host, port = url.removeprefix("http://").rsplit(":", 1)
        yield host, int(port)
        tg.cancel_scope.cancel()


async def _read_to_end(sock: anyio.abc.ByteStream) -> bytes:
    got = b""
    with anyio.fail_after(30):
        try:
            while True:
                got += await sock.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return got


async def test_the_http2_preface_is_answered_in_http1_and_the_connection_closes(address) -> None:
    sock = await anyio.connect_tcp(*address)
    await sock.send(PREFACE + SETTINGS)
    first = await sock.receive()
    assert first.startswith(b"HTTP/1.1 "), first[:40]  # was an HTTP/2 SETTINGS frame
    await _read_to_end(sock)  # was: open for ever
    await sock.aclose()


async def test_an_h2c_upgrade_is_ignored(address) -> None:
    sock = await anyio.connect_tcp(*address)
    await sock.send(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                    b"Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n")
    first = await sock.receive()
    assert first.startswith(b"HTTP/1.1 200 ") and b'{"status":"ok"}' in first, first[:60]  # was 101 Switching Protocols
    await sock.aclose()


@pytest.mark.parametrize(("request_bytes", "status"), [
    (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400),
    (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -1\r\n\r\n", 400),
    (b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pasted: " + b"sk-secret" * 25000 + b"\r\n\r\n", 431),
], ids=["two_lengths", "negative_length", "huge_header"])
async def test_a_request_hypercorn_cannot_read_gets_the_api_error_body(address, request_bytes: bytes, status: int) -> None:
    sock = await anyio.connect_tcp(*address)
    await sock.send(request_bytes)
    reply = await _read_to_end(sock)
    await sock.aclose()
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(f"HTTP/1.1 {status} ".encode()) and b"content-type: application/json" in head.lower()
    error = msgspec.json.decode(body)["error"]  # was an empty body: an OpenAI client read no message
    assert error["type"] == "invalid_request_error" and "refused before it was read" in error["message"]
    assert b"secret" not in body



async def test_another_hypercorn_server_in_the_process_keeps_http2(address) -> None:
    """The entry's change is its own server's: an application that embeds the runtime and runs
    a Hypercorn server of its own beside the entry keeps HTTP/2 (the patch was process-wide)."""
    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    async def app(scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                await send({"type": message["type"] + ".complete"})  # lifespan.startup.complete
            await send({"type": "lifespan.shutdown.complete"})
            return
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    config = Config()
    config.bind = [f"fd://{listener.detach()}"]
    config.accesslog = config.errorlog = None
    stopped = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(partial(serve, app, config, shutdown_trigger=stopped.wait))  # type: ignore[arg-type]
        with anyio.fail_after(30):
            sock = await anyio.connect_tcp("127.0.0.1", port)  # listening already: served once it runs
            await sock.send(PREFACE + SETTINGS)
            first = await sock.receive()
        await sock.aclose()
        stopped.set()
    assert first[3:4] == b"\x04", first[:40]  # an HTTP/2 SETTINGS frame, not an HTTP/1.1 answer
