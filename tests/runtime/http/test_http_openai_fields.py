"""What an OpenAI client asks beyond its messages is honoured or refused, never ignored, on the
HTTP entry, through the official ``openai`` package:

* ``stream_options.include_usage`` ends the stream with a usage chunk (no choices), as
  OpenAI's API does (it was ignored: the client's ``usage`` stayed None);
* a content part that is not text (``input_audio``, ``image_url``) is a 400 naming its place,
  ``messages[2].content[1].type``, and the parts the entry reads, never the value (it was
  dropped, and the words around it answered with a 200);
* ``stop`` and ``max_tokens`` cut the answer (``finish_reason: length`` for the latter);
* a demanded tool call, a JSON ``response_format``, ``logprobs``, an audio answer, and
  ``stream_options`` without ``stream`` are 400s naming the field; ``tools`` under
  ``tool_choice: auto`` are answered in words."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import openai
import pytest

from ontoflow.runtime.http import HttpEntryConfig, Reply, serve_http_entry

pytestmark = pytest.mark.anyio

_ANSWER = "the first line\nthe second line END and what follows"


async def _answer(session_id: str, text: str, *, channel: str, run: bool = False) -> Reply:
    return Reply(text=_ANSWER)


@pytest.fixture
async def client() -> AsyncIterator[openai.AsyncOpenAI]:
    async with anyio.create_task_group() as tg:
        address = await tg.start(serve_http_entry, HttpEntryConfig(bind="127.0.0.1:0"), _answer)
        async with openai.AsyncOpenAI(base_url=f"{address}/v1", api_key="unused", max_retries=0, timeout=30) as c:
            yield c
        tg.cancel_scope.cancel()


_ASK = [{"role": "user", "content": "three words here"}]


async def test_a_stream_asking_for_its_usage_ends_with_a_usage_chunk(client) -> None:
    with anyio.fail_after(30):
        stream = await client.chat.completions.create(model="m", messages=_ASK, stream=True,
                                                      stream_options={"include_usage": True})
        got = [chunk async for chunk in stream]
    assert got[-1].choices == [] and got[-1].usage is not None
    assert (got[-1].usage.prompt_tokens, got[-1].usage.completion_tokens, got[-1].usage.total_tokens) == (3, 10, 13)
    assert "".join(c.choices[0].delta.content or "" for c in got if c.choices) == _ANSWER
    assert all(c.usage is None for c in got[:-1])


async def test_a_stream_not_asking_for_usage_has_none(client) -> None:
    with anyio.fail_after(30):
        got = [c async for c in await client.chat.completions.create(model="m", messages=_ASK, stream=True)]
    assert all(c.choices and c.usage is None for c in got)


@pytest.mark.parametrize("part", [
    {"type": "input_audio", "input_audio": {"data": "U0VDUkVUQVVESU8=", "format": "wav"}},
    {"type": "image_url", "image_url": {"url": "https://example.invalid/SECRETIMAGE.png"}},
    {"type": "file", "file": {"file_id": "SECRETFILE"}},
])
async def test_a_content_part_that_is_not_text_is_refused_by_its_place(client, part: dict[str, Any]) -> None:
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": [{"type": "text", "text": "what is this?"}, part]},
    ]
    with anyio.fail_after(30), pytest.raises(openai.BadRequestError) as refused:
        await client.chat.completions.create(model="m", messages=messages)
    assert refused.value.param == "messages[2].content[1].type"
    assert isinstance(refused.value.body, dict)
    assert refused.value.body["message"] == (
        "messages[2].content[1].type: a content part of a type this entry does not read; it reads text parts "
        "(no image, audio or file)")
    assert "SECRET" not in refused.value.message


async def test_a_text_part_without_text_and_a_part_in_the_history_are_refused_too(client) -> None:
    with anyio.fail_after(30):
        with pytest.raises(openai.BadRequestError) as empty:
            await client.chat.completions.create(model="m", messages=[{"role": "user", "content": [{"type": "text"}]}])
        with pytest.raises(openai.BadRequestError) as earlier:
            await client.chat.completions.create(model="m", messages=[
                {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,x"}}]},
                {"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]},
                {"role": "user", "content": "and now?"}])
    assert empty.value.param == "messages[0].content[0].text"
    assert earlier.value.param == "messages[0].content[0].type"


async def test_stop_and_max_tokens_cut_the_answer(client) -> None:
    with anyio.fail_after(30):
        stopped = await client.chat.completions.create(model="m", messages=_ASK, stop=["END", "nothing"])
        short = await client.chat.completions.create(model="m", messages=_ASK, max_tokens=4)
        streamed = [c async for c in await client.chat.completions.create(
            model="m", messages=_ASK, max_completion_tokens=4, stream=True, stream_options={"include_usage": True})]
    assert (stopped.choices[0].message.content, stopped.choices[0].finish_reason) == (
        "the first line\nthe second line ", "stop")
    assert (short.choices[0].message.content, short.choices[0].finish_reason) == ("the first line\nthe", "length")
    assert short.usage is not None and short.usage.completion_tokens == 4
    assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == "the first line\nthe"
    assert [c.choices[0].finish_reason for c in streamed if c.choices][-1] == "length"
    assert streamed[-1].usage is not None and streamed[-1].usage.completion_tokens == 4


@pytest.mark.parametrize(("asked", "param"), [
    ({"tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "required"}, "tool_choice"),
    ({"tools": [{"type": "function", "function": {"name": "f"}}],
      "tool_choice": {"type": "function", "function": {"name": "f"}}}, "tool_choice"),
    ({"response_format": {"type": "json_object"}}, "response_format.type"),
    ({"logprobs": True}, "logprobs"),
    ({"modalities": ["text", "audio"], "audio": {"voice": "alloy", "format": "wav"}}, "audio"),
    ({"stream_options": {"include_usage": True}}, "stream_options"),
    ({"n": 2}, "n"),
    ({"top_p": 1.5}, "top_p"),
    ({"presence_penalty": -3}, "presence_penalty"),
    ({"frequency_penalty": 2.5}, "frequency_penalty"),
    ({"top_logprobs": 21}, "top_logprobs"),
    ({"stop": ["a", "b", "c", "d", "e"]}, "stop"),
])
async def test_what_the_entry_cannot_do_is_refused_naming_the_field(client, asked: dict[str, Any], param: str) -> None:
    with anyio.fail_after(30), pytest.raises(openai.BadRequestError) as refused:
        await client.chat.completions.create(model="m", messages=_ASK, **asked)
    assert refused.value.param == param


async def test_tools_the_client_offers_are_answered_in_words(client) -> None:
    with anyio.fail_after(30):
        done = await client.chat.completions.create(
            model="m", messages=_ASK, tools=[{"type": "function", "function": {"name": "f"}}], tool_choice="auto",
            response_format={"type": "text"}, seed=7, top_p=0.5)
    assert (done.choices[0].message.content, done.choices[0].message.tool_calls) == (_ANSWER, None)


async def test_the_listed_model_is_retrieved_and_another_is_not_found(client) -> None:
    with anyio.fail_after(30):
        found = await client.models.retrieve("ontoflow")
        with pytest.raises(openai.NotFoundError) as missing:
            await client.models.retrieve("SECRET-model")
    assert (found.id, found.owned_by) == ("ontoflow", "ontoflow")
    assert missing.value.code == "model_not_found" and "SECRET" not in missing.value.message
