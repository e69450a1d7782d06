"""Requests the entry refuses before reading anything (a wrong bearer token, a tokenless entry
asked by another Host or a web page's Origin) are logged, at their 1st, 2nd, 4th, 8th...
(``http_request_refused``: the code, the count so far, the client's address), never with the
token or the header's value.

Before, nothing was logged: a client guessing the token as fast as it could, or a web page
trying the entry from the person's browser, was invisible to the operator."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import httpx2
import openai
import pytest
from structlog.testing import capture_logs

from ontoflow.runtime.http import HttpEntryConfig, Reply, serve_http_entry

pytestmark = pytest.mark.anyio


async def _answer(session_id: str, text: str, *, channel: str, run: bool = False) -> Reply:
    return Reply(text="answered")


@pytest.fixture
async def serve() -> AsyncIterator:
    async with anyio.create_task_group() as tg:

        async def start(token: str | None) -> str:
            return await tg.start(serve_http_entry, HttpEntryConfig(bind="127.0.0.1:0", token=token), _answer)

        yield start
        tg.cancel_scope.cancel()


def _refused(logs: list[dict]) -> list[tuple[str, int, str]]:
    return [(e["code"], e["count"], e["client"]) for e in logs if e["event"] == "http_request_refused"]


async def test_wrong_tokens_are_logged_at_doubling_counts_without_the_guess(serve) -> None:
    address = await serve("tok-right-7f3a")
    said = [{"role": "user", "content": "hi"}]
    with capture_logs() as logs:
        for n in range(5):
            async with openai.AsyncOpenAI(base_url=f"{address}/v1", api_key=f"guess-{n}-c0ffee", max_retries=0) as client:
                with pytest.raises(openai.AuthenticationError):
                    await client.chat.completions.create(model="m", messages=said)
        async with openai.AsyncOpenAI(base_url=f"{address}/v1", api_key="tok-right-7f3a", max_retries=0) as client:
            assert (await client.chat.completions.create(model="m", messages=said)).choices[0].message.content == "answered"
    assert _refused(logs) == [("invalid_api_key", 1, "127.0.0.1"), ("invalid_api_key", 2, "127.0.0.1"),
                              ("invalid_api_key", 4, "127.0.0.1")]
    assert "c0ffee" not in str(logs) and "7f3a" not in str(logs)


async def test_a_foreign_host_and_origin_are_logged_without_their_value(serve) -> None:
    address = await serve(None)
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with capture_logs() as logs:
        async with httpx2.AsyncClient(base_url=address) as http:
            host = await http.post("/v1/chat/completions", json=body, headers={"Host": "rebound.evil-site.example"})
            origin = await http.post("/v1/chat/completions", json=body, headers={"Origin": "https://evil-site.example"})
    assert (host.status_code, origin.status_code) == (403, 403)
    assert _refused(logs) == [("host_not_allowed", 1, "127.0.0.1"), ("origin_not_allowed", 1, "127.0.0.1")]
    assert "evil-site" not in str(logs)
