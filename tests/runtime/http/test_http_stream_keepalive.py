"""A streamed answer to a long turn keeps bytes flowing: its first chunk (the role, as OpenAI
sends it) leaves at once and ``: keep-alive`` comment lines follow every ``keepalive_s`` until
the answer. It sent nothing at all until the run ended, so a proxy's idle timeout (nginx's
``proxy_read_timeout``, 60 s) cut any run longer than that, and a client could not tell a
long run from a dead server. The openai SDK still reads the stream as it reads OpenAI's."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import httpx
import httpx2
import openai
import pytest

from ontoflow.runtime.http import HttpEntryConfig, Reply, serve_http_entry

pytestmark = pytest.mark.anyio

ANSWER = "Vale (VALE3.SA): 60.10 BRL\nsource: quotes.json"


class Held:
    """A turn that takes as long as the test says (``release``)."""

    def __init__(self) -> None:
        self.release = anyio.Event()
        self.asked = 0

    async def __call__(self, session_id: str, text: str, *, channel: str, run: bool = False) -> Reply:
        self.asked += 1
        await self.release.wait()
        return Reply(text=ANSWER)


@pytest.fixture
async def entry() -> AsyncIterator[tuple[str, Held]]:
    held = Held()
    async with anyio.create_task_group() as tg:
        address = await tg.start(serve_http_entry, HttpEntryConfig(bind="127.0.0.1:0", keepalive_s=0.05), held)
        yield address, held
        tg.cancel_scope.cancel()


async def test_the_first_chunk_leaves_at_once_and_keep_alives_follow_until_the_answer(entry) -> None:
    address, held = entry
    seen = b""
    async with httpx.AsyncClient(timeout=30) as http, http.stream("POST", f"{address}/v1/chat/completions", json={
            "model": "m", "stream": True, "messages": [{"role": "user", "content": "price of Vale"}]}) as got:
        assert got.status_code == 200 and got.headers["content-type"].startswith("text/event-stream")
        parts = got.aiter_raw()
        with anyio.fail_after(30):
            while seen.count(b": keep-alive\n\n") < 2:  # the turn still works: nothing answered yet
                seen += await parts.__anext__()
        assert seen.startswith(b"data: ") and b'"role":"assistant"' in seen.split(b"\n\n")[0]
        assert b"VALE3" not in seen
        held.release.set()
        async for part in parts:
            seen += part
    assert seen.endswith(b"data: [DONE]\n\n") and b"VALE3" in seen


class _Tap(httpx2.AsyncBaseTransport):
    """The SDK's transport, counting the keep-alive lines that pass through it."""

    def __init__(self, enough: int) -> None:
        self._inner = httpx2.AsyncHTTPTransport()
        self.seen = bytearray()
        self.kept_alive = anyio.Event()
        self._enough = enough

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        tap = self

        class _Stream(httpx2.AsyncByteStream):
            async def __aiter__(self) -> AsyncIterator[bytes]:
                async for part in response.stream:  # type: ignore[union-attr]
                    tap.seen += part
                    if tap.seen.count(b": keep-alive") >= tap._enough:
                        tap.kept_alive.set()
                    yield part

            async def aclose(self) -> None:
                await response.stream.aclose()  # type: ignore[union-attr]

        return httpx2.Response(response.status_code, headers=response.headers, stream=_Stream(),
                               extensions=response.extensions)

    async def aclose(self) -> None:
        await self._inner.aclose()


async def test_the_openai_sdk_reads_a_kept_alive_stream_as_any_other(entry) -> None:
    address, held = entry
    tap = _Tap(enough=3)
    async with httpx2.AsyncClient(transport=tap) as http, openai.AsyncOpenAI(
            base_url=f"{address}/v1", api_key="unused", max_retries=0, timeout=30, http_client=http) as client:
        stream = await client.chat.completions.create(model="m", stream=True,
                                                      messages=[{"role": "user", "content": "price of Vale"}])
        pieces, roles = [], []

        async def read() -> None:
            async for chunk in stream:
                roles.append(chunk.choices[0].delta.role)
                pieces.append(chunk.choices[0].delta.content or "")

        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            with anyio.fail_after(30):
                await tap.kept_alive.wait()  # three keep-alives read by the SDK while the turn works
            assert roles == ["assistant"] and pieces == [""]  # only the first chunk, at once
            held.release.set()
    assert "".join(pieces) == ANSWER and held.asked == 1
