"""The HTTP entry, spoken to by the official ``openai`` package and by raw HTTP (httpx).

The runtime behind the entry is a recording answerer here: what is tested is the entry (the
API, streaming, sessions, tokens, errors); the whole path from a sentence to a run through it
is tested with the daemon.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import httpx
import openai
import pytest
from structlog.testing import capture_logs

from ontoflow.runtime.errors import ConfigError
from ontoflow.runtime.http import MAX_TEXT_CHARS, HttpEntryConfig, Reply, serve_http_entry

pytestmark = pytest.mark.anyio


class Recorder:
    """Answers every turn with a scripted reply and records what it was asked."""

    def __init__(self, text: str = "Nordea: 10.5 EUR\nsource: quotes.csv", status: str = "success") -> None:
        self.turns: list[tuple[str, str, str]] = []
        self.text = text
        self.status = status
        self.fail = False

    async def __call__(self, session_id: str, text: str, *, channel: str, run: bool = False) -> Reply:
        if self.fail:
            raise RuntimeError(f"secret-value {text}")
        self.turns.append((session_id, text, channel))
        return Reply(text=self.text, status=self.status)  # type: ignore[arg-type]


async def _serve(answer: Recorder, *, token: str | None = None) -> AsyncIterator[str]:
    async with anyio.create_task_group() as tg:
        address = await tg.start(serve_http_entry, HttpEntryConfig(bind="127.0.0.1:0", token=token), answer)
        yield address
        tg.cancel_scope.cancel()


@pytest.fixture
async def entry() -> AsyncIterator[tuple[str, Recorder]]:
    answer = Recorder()
    async for address in _serve(answer):
        yield address, answer


def _client(address: str, key: str = "unused") -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{address}/v1", api_key=key, max_retries=0, timeout=20)


async def test_a_plain_completion_carries_the_runtimes_answer(entry) -> None:
    address, answer = entry
    async with _client(address) as client:
        done = await client.chat.completions.create(
            model="ontoflow", messages=[{"role": "user", "content": "qual o preço da Nordea?"}])
    assert done.choices[0].message.content == answer.text
    assert done.choices[0].message.role == "assistant"
    assert done.choices[0].finish_reason == "stop"
    assert done.model == "ontoflow"
    assert done.usage is not None and done.usage.prompt_tokens == 5
    assert answer.turns[0][1:] == ("qual o preço da Nordea?", "http")


async def test_a_streamed_completion_adds_up_to_the_same_answer(entry) -> None:
    address, answer = entry
    async with _client(address) as client:
        stream = await client.chat.completions.create(
            model="any-model", stream=True, messages=[{"role": "user", "content": "price of Nordea"}])
        pieces, finishes = [], []
        async for chunk in stream:
            pieces.append(chunk.choices[0].delta.content or "")
            finishes.append(chunk.choices[0].finish_reason)
    assert "".join(pieces) == answer.text
    assert finishes[-1] == "stop" and all(f is None for f in finishes[:-1])
    assert len(pieces) >= 3  # a role chunk, the answer's lines, the end


async def test_the_next_turn_of_a_conversation_finds_its_session(entry) -> None:
    address, answer = entry
    first = [{"role": "user", "content": "price of Nordea"}]
    async with _client(address) as client:
        reply = await client.chat.completions.create(model="m", messages=first)
        second = [*first, {"role": "assistant", "content": reply.choices[0].message.content},
                  {"role": "user", "content": "the Swedish one"}]
        await client.chat.completions.create(model="m", messages=second)
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "price of Nordea"}, {
            "role": "assistant", "content": "something else"}, {"role": "user", "content": "the Swedish one"}])
        await client.chat.completions.create(model="m", messages=first, metadata={"session_id": "ada"})
    sessions = [s for s, _, _ in answer.turns]
    assert sessions[0] == sessions[1]  # the same conversation
    assert sessions[2] != sessions[0]  # another history is another conversation
    assert sessions[3] == "ada"  # a client that names the session (metadata.session_id) is believed


async def test_with_a_token_a_request_without_it_is_refused() -> None:
    answer = Recorder()
    async for address in _serve(answer, token="s3cret-token"):
        async with _client(address, key="wrong") as client:
            with pytest.raises(openai.AuthenticationError):
                await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        async with _client(address, key="s3cret-token") as client:
            done = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
            models = await client.models.list()
    assert done.choices[0].message.content == answer.text
    assert [m.id for m in models.data] == ["ontoflow"]
    assert len(answer.turns) == 1


async def test_a_non_loopback_address_needs_a_token() -> None:
    with pytest.raises(ConfigError, match="needs a bearer token"):
        await serve_http_entry(HttpEntryConfig(bind="0.0.0.0:0"), Recorder())
    with pytest.raises(ConfigError, match="expected HOST:PORT"):
        await serve_http_entry(HttpEntryConfig(bind="127.0.0.1"), Recorder())


@pytest.mark.parametrize(
    ("body", "status", "param"),
    [
        (b"{not json", 400, None),
        (b'{"model": "m", "messages": [{"role": "user", "content": 3}]}', 400, "messages[0].content"),
        (b'{"model": "m", "messages": []}', 400, "messages"),
        (b'{"model": "m", "messages": [{"role": "assistant", "content": "hi"}]}', 400, "messages"),
        (b'{"model": "m", "messages": [{"role": "user", "content": "   "}]}', 400, "messages[-1].content"),
        (b'{"model": "m", "messages": [{"role": "user", "content": "' + b"x" * (MAX_TEXT_CHARS + 1) + b'"}]}', 400,
         "messages[-1].content"),
    ],
)
async def test_a_bad_request_gets_the_apis_error_naming_the_field(entry, body: bytes, status: int, param) -> None:
    address, answer = entry
    async with httpx.AsyncClient() as http:
        reply = await http.post(f"{address}/v1/chat/completions", content=body,
                                headers={"content-type": "application/json"})
    assert reply.status_code == status
    error = reply.json()["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == param
    assert "xxxx" not in error["message"]
    assert answer.turns == []


async def test_unknown_routes_and_methods_answer_in_the_apis_shape(entry) -> None:
    address, _ = entry
    async with httpx.AsyncClient() as http:
        missing = await http.get(f"{address}/v1/nothing")
        wrong = await http.get(f"{address}/v1/chat/completions")
        health = await http.get(f"{address}/health")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "unknown_url"
    assert wrong.status_code == 405 and "error" in wrong.json()
    assert "/v1/chat/completions" in missing.json()["error"]["message"]  # it lists the routes
    assert health.json() == {"status": "ok"}


async def test_an_unknown_path_is_not_echoed_in_the_error(entry) -> None:
    address, _ = entry
    async with httpx.AsyncClient() as http:
        missing = await http.get(f"{address}/v1/sk-live-{'9' * 40}")
        wrong = await http.delete(f"{address}/v1/chat/completions")
    assert missing.status_code == 404 and "sk-live" not in missing.text
    assert wrong.status_code == 405 and "DELETE" not in wrong.text


async def test_a_failure_behind_the_entry_is_a_500_without_its_text(entry) -> None:
    address, answer = entry
    answer.fail = True
    with capture_logs() as logs:
        async with _client(address) as client:
            with pytest.raises(openai.InternalServerError) as caught:
                await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "my card 4111"}])
    assert "4111" not in str(caught.value) and "secret-value" not in str(caught.value)
    assert not any("4111" in str(entry) for entry in logs)
    assert any(e["event"] == "http_answer_failed" and e["error"] == "RuntimeError" for e in logs)
