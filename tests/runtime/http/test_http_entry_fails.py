"""When the entry itself fails after the answer (its conversation book could not record the
turn: the daemon's journal refused the write), the client gets the API's error shape, the
failure is logged by its type and place, and the entry goes on answering.

Before, the exception left the app: a plain-text ``Internal Server Error`` (not the error body
an OpenAI client reads), nothing in the log (Hypercorn's error log is off), and a streamed
answer cut mid-stream (the ``openai`` client saw a broken connection, not an error)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import openai
import pytest
from structlog.testing import capture_logs

from ontoflow.runtime.http import ConversationBook, HttpEntryConfig, Reply, serve_http_entry

pytestmark = pytest.mark.anyio


async def _answer(session_id: str, text: str, *, channel: str, run: bool = False) -> Reply:
    return Reply(text=f"answered {text}")


class _Refusing:
    """What the daemon hands the book to record a conversation: its journal, here one whose
    disk is full (the first ``fails`` writes)."""

    def __init__(self, fails: int) -> None:
        self.fails = fails

    def __call__(self, key: str, session_id: str) -> None:
        if self.fails > 0:
            self.fails -= 1
            raise OSError(28, "No space left on device")


@pytest.fixture
async def client() -> AsyncIterator[openai.AsyncOpenAI]:
    book = ConversationBook(on_remember=_Refusing(fails=2))
    async with anyio.create_task_group() as tg:
        address = await tg.start(lambda task_status: serve_http_entry(
            HttpEntryConfig(bind="127.0.0.1:0"), _answer, conversations=book, task_status=task_status))
        async with openai.AsyncOpenAI(base_url=f"{address}/v1", api_key="unused", max_retries=0, timeout=60) as http:
            yield http
        tg.cancel_scope.cancel()


async def test_a_failure_of_the_entry_is_an_api_error_logged_by_type(client: openai.AsyncOpenAI) -> None:
    said = [{"role": "user", "content": "hi"}]
    with capture_logs() as logs:
        with pytest.raises(openai.InternalServerError) as plain:
            await client.chat.completions.create(model="m", messages=said)
        with pytest.raises(openai.APIError) as streamed:
            async for _ in await client.chat.completions.create(model="m", messages=said, stream=True):
                pass
        after = await client.chat.completions.create(model="m", messages=said)
    assert plain.value.body["type"] == "server_error" and "failed" in plain.value.body["message"]
    assert not isinstance(streamed.value, openai.APIConnectionError)  # an error event, not a cut
    assert "failed" in streamed.value.message
    failed = [e for e in logs if e["event"] == "http_entry_failed"]
    assert [e["error"] for e in failed] == ["OSError", "OSError"]
    assert all(e["where"].startswith(__file__) for e in failed)  # where it was raised: a place, never a value
    assert after.choices[0].message.content == "answered hi"
