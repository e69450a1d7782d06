"""The HTTP entry holds a bounded number of TCP connections: past ``max_connections`` (or
``max_connections_per_client`` from one address) a connection is answered 503 in the API's
error shape and closed at once, so a flood of idle connections cannot take the daemon's file
descriptors; when the flood lets go, an ``openai`` client is served as before. A connection
that sends nothing, or headers that never end, is closed after ``idle_timeout_s``.

Before, Hypercorn accepted every connection: each idle one held a descriptor in the daemon's
process until the process had none left (``EMFILE`` for its journal and its workers)."""

from __future__ import annotations

import os
import resource
from collections.abc import AsyncIterator

import anyio
import httpx2
import openai
import pytest
from anyio.abc import SocketStream
from structlog.testing import capture_logs

from ontoflow.runtime.http import HttpEntryConfig, Reply, serve_http_entry
from ontoflow.runtime.http._slots import TurnSlots, client_of

pytestmark = pytest.mark.anyio

_BOUND = 8
_FLOOD = 40


async def _answer(session_id: str, text: str, *, channel: str, run: bool = False) -> Reply:
    return Reply(text=f"answered {text}")


@pytest.fixture
async def entry(request) -> AsyncIterator[tuple[str, int]]:
    per_client, idle = getattr(request, "param", (_BOUND, 3600.0))
    config = HttpEntryConfig(bind="127.0.0.1:0", max_connections=_BOUND, max_connections_per_client=per_client,
                             idle_timeout_s=idle)
    async with anyio.create_task_group() as tg:
        address = await tg.start(serve_http_entry, config, _answer)
        host, _, port = address.removeprefix("http://").rpartition(":")
        yield host, int(port)
        tg.cancel_scope.cancel()


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


class _Closed:
    """What the entry sent on each connection it closed, in the order it closed them."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []
        self._changed = anyio.Event()

    async def read_to_end(self, stream: SocketStream) -> None:
        got = b""
        try:
            while True:
                got += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            self.sent.append(got)
            self._changed.set()

    async def until(self, count: int) -> None:
        while len(self.sent) < count:
            self._changed = anyio.Event()
            await self._changed.wait()


async def _ask(host: str, port: int, source: str = "127.0.0.1", retries: int = 0) -> str:
    http = httpx2.AsyncClient(transport=httpx2.AsyncHTTPTransport(local_address=source))
    async with openai.AsyncOpenAI(base_url=f"http://{host}:{port}/v1", api_key="unused", max_retries=retries,
                                  timeout=30, http_client=http) as client:
        done = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hello"}])
    return done.choices[0].message.content or ""


async def test_a_flood_past_the_bound_is_closed_and_a_client_is_served_after(entry) -> None:
    host, port = entry
    before = _fds()
    closed = _Closed()
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            flood = []
            for _ in range(_FLOOD):
                stream = await anyio.connect_tcp(host, port)
                flood.append(stream)
                tg.start_soon(closed.read_to_end, stream)
            await closed.until(_FLOOD - _BOUND)  # the entry closes every one past its bound
            # Each end of a connection is a descriptor of this process: the flood's 40, and the
            # entry's own at most its bound (it was 40 of its own, and 4000 for a flood of 4000).
            assert _fds() - before <= _FLOOD + _BOUND + 2
            tg.cancel_scope.cancel()
        for stream in flood:
            await stream.aclose()
        assert len(closed.sent) == _FLOOD - _BOUND
        assert all(c.startswith(b"HTTP/1.1 503 ") and b'"code":"too_many_connections"' in c for c in closed.sent)
        # The held connections' slots came back (retries: the entry frees a slot when it has read
        # the close, which a quick next connection may beat; a 503 the openai client retries).
        assert await _ask(host, port, retries=3) == "answered hello"


@pytest.mark.parametrize("entry", [(2, 3600.0)], indirect=True)
async def test_one_address_holds_its_share_and_another_is_served(entry) -> None:
    host, port = entry
    closed = _Closed()
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            held = []
            for _ in range(4):
                stream = await anyio.connect_tcp(host, port, local_host="127.0.0.1")
                held.append(stream)
                tg.start_soon(closed.read_to_end, stream)
            await closed.until(2)
            assert await _ask(host, port, source="127.0.0.2") == "answered hello"  # while 127.0.0.1 holds its share
            tg.cancel_scope.cancel()
        for stream in held:
            await stream.aclose()
    assert len(closed.sent) == 2


@pytest.mark.parametrize("entry", [(_BOUND, 0.2)], indirect=True)
async def test_a_connection_that_says_nothing_or_never_ends_its_headers_is_closed(entry) -> None:
    host, port = entry
    closed = _Closed()
    with anyio.fail_after(30):
        async with await anyio.connect_tcp(host, port) as silent, await anyio.connect_tcp(host, port) as trickle:
            await trickle.send(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and no blank line
            async with anyio.create_task_group() as tg:
                tg.start_soon(closed.read_to_end, silent)
                tg.start_soon(closed.read_to_end, trickle)
    assert closed.sent == [b"", b""]


def test_an_ipv6_client_is_its_64_so_a_flood_from_its_addresses_is_one_client() -> None:
    assert client_of("2001:db8:1:2::1") == client_of("2001:db8:1:2:ffff:ffff:ffff:fffe") == "2001:db8:1:2::/64"
    assert client_of("2001:db8:1:3::1") != client_of("2001:db8:1:2::1")
    assert client_of("::ffff:192.0.2.7") == client_of("192.0.2.7") == "192.0.2.7"
    assert client_of("fe80::1%eth0") == "fe80::/64"
    slots = TurnSlots(8, 2)
    assert [slots.take(client_of(f"2001:db8:1:2::{n}")) for n in range(1, 4)] == [None, None, "client"]


async def test_a_bound_past_the_descriptor_limit_is_lowered_to_half_of_it() -> None:
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    config = HttpEntryConfig(bind="127.0.0.1:0", max_connections=soft * 4)
    with capture_logs() as logs, anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            await tg.start(serve_http_entry, config, _answer)
            tg.cancel_scope.cancel()
    lowered = [e for e in logs if e["event"] == "http_max_connections_lowered"]
    assert [(e["max_connections"], e["configured"], e["fd_limit"]) for e in lowered] == [(soft // 2, soft * 4, soft)]
