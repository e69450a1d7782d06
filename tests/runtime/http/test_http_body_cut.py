"""A client that closes its connection halfway through its request body (or sends a broken
chunk) is a client gone, logged at info as ``http_turn_cancelled``; it is not the entry's failure.

Before, Starlette's ``ClientDisconnect`` left the body loop and the entry logged
``http_entry_failed`` at error level, as it does for its own bugs: any client could write error
lines at will, and an operator reading the log saw an entry that kept failing. The entry's slot
comes back either way (a request after it is answered)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import openai
import pytest
from structlog.testing import capture_logs

from ontoflow.runtime.http import HttpEntryConfig, Reply, serve_http_entry

pytestmark = pytest.mark.anyio


async def _answer(session_id: str, text: str, *, channel: str, run: bool = False) -> Reply:
    return Reply(text=f"answered {text}")


@pytest.fixture
async def address() -> AsyncIterator[str]:
    async with anyio.create_task_group() as tg:
        yield await tg.start(serve_http_entry, HttpEntryConfig(bind="127.0.0.1:0", max_turns=1), _answer)
        tg.cancel_scope.cancel()


HEAD = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"


async def _until(condition) -> None:
    with anyio.fail_after(30):
        while not condition():
            await anyio.sleep(0.01)


@pytest.mark.parametrize("request_bytes", [
    HEAD + b'Content-Length: 100\r\n\r\n{"model": "m", "messages": [{"role"',  # then closes
    HEAD + b'Transfer-Encoding: chunked\r\n\r\n5\r\n{"mod\r\nzz\r\n',  # a chunk size that is no number
], ids=["cut", "broken_chunk"])
async def test_a_body_cut_short_is_a_client_gone_not_an_entry_failure(address: str, request_bytes: bytes) -> None:
    host, port = address.removeprefix("http://").rsplit(":", 1)
    with capture_logs() as logs:
        sock = await anyio.connect_tcp(host, int(port))
        await sock.send(request_bytes)
        await sock.aclose()
        await _until(lambda: any(e["event"] == "http_turn_cancelled" or e["log_level"] == "error" for e in logs))
        async with openai.AsyncOpenAI(base_url=f"{address}/v1", api_key="unused", max_retries=0, timeout=30) as client:
            after = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert after.choices[0].message.content == "answered hi"  # its one slot came back
    assert not [e for e in logs if e["log_level"] == "error"], logs
    gone = [e for e in logs if e["event"] == "http_turn_cancelled"]
    assert [e["reason"] for e in gone] == ["client_disconnected_in_body"] and "model" not in str(gone)
