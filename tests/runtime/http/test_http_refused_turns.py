"""A turn the runtime did not take (busy at its run limit, shutting down, its edge down) is an
HTTP error an OpenAI client understands and retries, not a 200 whose "answer" is the refusal:
the SDK showed "busy: 10000 runs in flight; retry later" as the assistant's words, never
retried, and the conversation kept that turn in its history."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import httpx
import openai
import pytest

from ontoflow.runtime.http import ConversationBook, HttpEntryConfig, Reply, serve_http_entry

pytestmark = pytest.mark.anyio


class Refusing:
    def __init__(self) -> None:
        self.reply = Reply(text="busy: 3 runs in flight; retry later", status="failure", refused="busy", retry_after_s=1.0)
        self.asked = 0

    async def __call__(self, session_id: str, text: str, *, channel: str, run: bool = False) -> Reply:
        self.asked += 1
        return self.reply


@pytest.fixture
async def entry() -> AsyncIterator[tuple[str, Refusing, list]]:
    refusing, told = Refusing(), []
    book = ConversationBook(on_remember=lambda key, sid: told.append(sid))
    async with anyio.create_task_group() as tg:
        address = await tg.start(lambda task_status: serve_http_entry(
            HttpEntryConfig(bind="127.0.0.1:0"), refusing, conversations=book, task_status=task_status))
        yield address, refusing, told
        tg.cancel_scope.cancel()


async def test_busy_is_a_429_with_retry_after_that_the_sdk_retries(entry) -> None:
    address, refusing, told = entry
    async with openai.AsyncOpenAI(base_url=f"{address}/v1", api_key="unused", max_retries=1, timeout=20) as client:
        with pytest.raises(openai.RateLimitError) as caught:
            await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "qual o preço da Vale?"}])
    assert refusing.asked == 2  # the SDK asked again after the Retry-After
    assert caught.value.response.headers["retry-after"] == "1"
    assert caught.value.body["code"] == "rate_limit_exceeded" and "busy" in caught.value.body["message"]
    assert told == []  # no turn of the conversation


@pytest.mark.parametrize(("refused", "status"), [("shutting_down", 503), ("unavailable", 503), ("internal", 500)])
async def test_a_daemon_that_cannot_answer_now_is_a_5xx_naming_why(entry, refused: str, status: int) -> None:
    address, refusing, told = entry
    refusing.reply = Reply(text="the daemon is shutting down; ask its successor", status="failure", refused=refused)
    async with httpx.AsyncClient() as http:
        got = await http.post(f"{address}/v1/chat/completions", json={
            "model": "m", "messages": [{"role": "user", "content": "qual o preço da Vale?"}]})
        assert got.status_code == status and got.headers["content-type"] == "application/json"
        error = got.json()["error"]
        assert error["message"] == refusing.reply.text and error["type"] == "server_error"
    assert told == []


async def test_a_streamed_turn_refused_after_its_first_chunk_is_an_error_event_the_sdk_raises(entry) -> None:
    # A stream's 200 and first chunk leave at once (test_http_stream_keepalive): a refusal that
    # comes after is OpenAI's mid-stream error, never the refusal as the assistant's words.
    address, refusing, told = entry
    refusing.reply = Reply(text="the daemon is shutting down; ask its successor", status="failure", refused="shutting_down")
    async with openai.AsyncOpenAI(base_url=f"{address}/v1", api_key="unused", max_retries=0, timeout=20) as client:
        stream = await client.chat.completions.create(model="m", stream=True,
                                                      messages=[{"role": "user", "content": "qual o preço da Vale?"}])
        with pytest.raises(openai.APIError) as caught:
            async for chunk in stream:
                assert not chunk.choices[0].delta.content  # the role's chunk only
    assert caught.value.body == {"message": refusing.reply.text, "type": "server_error", "param": None,
                                 "code": "shutting_down"}
    assert told == []


async def test_a_sentence_longer_than_the_edge_takes_is_a_400_naming_the_field(entry) -> None:
    # The entry took 32,768 characters; the edge refuses past 2,000, and that refusal came
    # back as a 200 whose assistant message was "intent rejected: input_text: ...".
    address, refusing, told = entry
    async with httpx.AsyncClient() as http:
        got = await http.post(f"{address}/v1/chat/completions", json={
            "model": "m", "messages": [{"role": "user", "content": "preço da Vale " * 200}]})
    assert got.status_code == 400 and got.json()["error"]["param"] == "messages[-1].content"
    assert "2800 characters, over the limit of 2000" in got.json()["error"]["message"] and refusing.asked == 0


async def test_a_model_endpoint_that_failed_after_the_adapters_retries_is_not_retried_by_the_sdk(entry) -> None:
    # The adapter retried the model already: the SDK's own two retries asked the model three
    # times as often, for a turn that failed the same way each time.
    address, refusing, told = entry
    refusing.reply = Reply(text="the language model could not classify the sentence: the endpoint answered 500",
                           status="failure", refused="adapter_failed")
    async with openai.AsyncOpenAI(base_url=f"{address}/v1", api_key="unused", max_retries=2, timeout=20) as client:
        with pytest.raises(openai.InternalServerError) as caught:
            await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "qual o preço da Vale?"}])
    assert caught.value.status_code == 503 and caught.value.body["code"] == "adapter_failed"
    assert caught.value.response.headers["x-should-retry"] == "false"
    assert refusing.asked == 1  # no retry
    assert told == []
