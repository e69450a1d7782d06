"""The HTTP entry under bodies an attacker (or a broken client) sends: each is a 400 in the
API's error shape, never a 500, and the entry goes on answering."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import httpx
import pytest

from ontoflow.runtime.http import HttpEntryConfig, Reply, serve_http_entry

pytestmark = pytest.mark.anyio


async def _answer(session_id: str, text: str, *, channel: str, run: bool = False) -> Reply:
    return Reply(text="fine", status="success")


@pytest.fixture
async def address() -> AsyncIterator[str]:
    async with anyio.create_task_group() as tg:
        yield await tg.start(serve_http_entry, HttpEntryConfig(bind="127.0.0.1:0"), _answer)
        tg.cancel_scope.cancel()


@pytest.mark.parametrize(
    ("body", "says"),
    [
        # A string holding bytes that are not UTF-8: msgspec raises UnicodeDecodeError, not a
        # DecodeError, and it escaped as a bare "500 Internal Server Error".
        (b'{"model": "m", "messages": [{"role": "user", "content": "\xff\xfe"}]}', "UTF-8"),
        # Deep nesting in a field the request does not know (skipped, but recursively): msgspec
        # raises RecursionError (a 500 too).
        (b'{"model": "m", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b', "messages": []}', "not JSON"),
    ],
    ids=["invalid-utf8", "deep-nesting"],
)
async def test_a_body_that_does_not_decode_is_a_400_and_the_entry_goes_on(address: str, body: bytes, says: str) -> None:
    async with httpx.AsyncClient() as http:
        reply = await http.post(f"{address}/v1/chat/completions", content=body, headers={"content-type": "application/json"})
        after = await http.post(f"{address}/v1/chat/completions",
                                json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["type"] == "invalid_request_error" and says in error["message"]
    assert after.status_code == 200 and after.json()["choices"][0]["message"]["content"] == "fine"


async def test_a_body_that_never_finishes_arriving_gets_a_408() -> None:
    """Slowloris on the body: headers promise 100 bytes, one arrives, then nothing. Hypercorn
    has no read timeout by default (a read timeout would also cut a long answer), so the
    connection and its handler were held for ever; the entry bounds the body's read."""
    async with anyio.create_task_group() as tg:
        address = await tg.start(serve_http_entry, HttpEntryConfig(bind="127.0.0.1:0", body_timeout_s=0.3), _answer)
        host, port = address.removeprefix("http://").rsplit(":", 1)
        with anyio.fail_after(5):
            async with await anyio.connect_tcp(host, int(port)) as stream:
                await stream.send(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                  b"Content-Length: 100\r\n\r\n{")
                reply = await stream.receive()
        assert reply.startswith(b"HTTP/1.1 408"), reply[:80]
        assert b"the request body did not arrive within" in reply
        tg.cancel_scope.cancel()


@pytest.mark.parametrize(
    ("fields", "param"),
    [({"metadata": {"session_id": "no spaces"}}, "metadata.session_id"),
     ({"metadata": {"session_id": "s" * 65}}, "metadata.session_id")],
    ids=["metadata-session", "metadata-session-too-long"],
)
async def test_a_session_name_that_is_no_session_id_is_a_400_naming_the_field(address: str, fields: dict, param: str) -> None:
    """It was answered 200, the refusal ("intent rejected: session_id ...") as the assistant's
    message: a client could not tell its request was wrong."""
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], **fields}
    async with httpx.AsyncClient() as http:
        reply = await http.post(f"{address}/v1/chat/completions", json=body)
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == param and "1-64 characters" in error["message"]


async def test_a_value_the_request_does_not_allow_is_named_by_its_path_not_quoted(address: str) -> None:
    # An unknown role came back as "Invalid enum value 'ROLE-sk-123'": whatever the client put
    # there (a token pasted in the wrong field) was echoed in the error.
    import openai

    async with openai.AsyncOpenAI(base_url=f"{address}/v1", api_key="unused", max_retries=0, timeout=20) as client:
        with pytest.raises(openai.BadRequestError) as caught:
            await client.chat.completions.create(model="m", messages=[{"role": "sk-secret-123", "content": "hi"}])  # type: ignore[misc, list-item]
        answered = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    error = caught.value.body
    assert isinstance(error, dict) and error["param"] == "messages[0].role"
    assert "sk-secret-123" not in str(caught.value) and "messages[0].role" in error["message"]
    assert answered.choices[0].message.content == "fine"


async def test_a_model_name_past_256_characters_is_a_400_not_echoed_back(address: str) -> None:
    # The answer names the model asked for: a 1 MB name came back whole, in every stream chunk.
    import openai

    async with openai.AsyncOpenAI(base_url=f"{address}/v1", api_key="unused", max_retries=0, timeout=20) as client:
        with pytest.raises(openai.BadRequestError) as caught:
            await client.chat.completions.create(model="M" * 100_000, messages=[{"role": "user", "content": "hi"}])
        answered = await client.chat.completions.create(model="m" * 256, messages=[{"role": "user", "content": "hi"}])
    error = caught.value.body
    assert isinstance(error, dict) and error["param"] == "model" and "MMMM" not in str(caught.value)
    assert answered.model == "m" * 256


@pytest.mark.parametrize(
    ("fields", "param"),
    [({"max_tokens": -1}, "max_tokens"), ({"max_completion_tokens": 0}, "max_completion_tokens"),
     ({"n": 2}, "n"), ({"temperature": 3.5}, "temperature")],
    ids=["negative-max-tokens", "zero-max-completion-tokens", "n-2", "temperature-3.5"],
)
async def test_a_setting_openai_refuses_is_a_400_naming_it(address: str, fields: dict, param: str) -> None:
    # They were accepted and ignored: OpenAI answers 400 to each (and n > 1 asks for choices
    # this entry cannot give). In range, they are taken and ignored.
    import openai

    async with openai.AsyncOpenAI(base_url=f"{address}/v1", api_key="unused", max_retries=0, timeout=20) as client:
        with pytest.raises(openai.BadRequestError) as caught:
            await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], **fields)
        answered = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}],
                                                        max_tokens=5, n=1, temperature=0.2)
    error = caught.value.body
    assert isinstance(error, dict) and error["param"] == param, error
    assert answered.choices[0].message.content == "fine"
