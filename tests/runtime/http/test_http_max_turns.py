"""The HTTP entry works on at most ``max_turns`` chat requests at once; one more is a 429 with
``Retry-After`` (the official ``openai`` client's ``RateLimitError``), answered before its body
is read, and a slot is free again once its answer (a stream's last byte too) has gone.

Before, nothing bounded them: each turn waiting on a slow model or a long run held its decoded
body (a 4 MB history is about 23 MB of objects; 20 such requests held 460 MB), so a client
with many connections could take the daemon's memory whole."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import openai
import pytest

from ontoflow.runtime.http import HttpEntryConfig, Reply, serve_http_entry

pytestmark = pytest.mark.anyio


class _Held:
    """An answerer that holds every turn until released, counting those inside."""

    def __init__(self) -> None:
        self.inside = 0
        self.changed = anyio.Event()
        self.release = anyio.Event()

    async def __call__(self, session_id: str, text: str, *, channel: str, run: bool = False) -> Reply:
        self.inside += 1
        self.changed.set()
        try:
            await self.release.wait()
            return Reply(text=f"answered {text}")
        finally:
            self.inside -= 1
            self.changed.set()

    async def until(self, inside: int) -> None:
        while self.inside != inside:
            self.changed = anyio.Event()
            await self.changed.wait()


@pytest.fixture
async def entry() -> AsyncIterator[tuple[openai.AsyncOpenAI, _Held]]:
    held = _Held()
    async with anyio.create_task_group() as tg:
        address = await tg.start(serve_http_entry, HttpEntryConfig(bind="127.0.0.1:0", max_turns=2), held)
        async with openai.AsyncOpenAI(base_url=f"{address}/v1", api_key="unused", max_retries=0, timeout=60) as client:
            yield client, held
        tg.cancel_scope.cancel()


async def _ask(client: openai.AsyncOpenAI, text: str, answers: list[str], *, stream: bool = False) -> None:
    messages = [{"role": "user", "content": text}]
    if stream:
        chunks = await client.chat.completions.create(model="m", messages=messages, stream=True)
        answers.append("".join([c.choices[0].delta.content or "" async for c in chunks if c.choices]))
    else:
        done = await client.chat.completions.create(model="m", messages=messages)
        answers.append(done.choices[0].message.content or "")


async def test_a_request_past_max_turns_is_a_429_and_the_slots_come_back(entry) -> None:
    client, held = entry
    answers: list[str] = []
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: _ask(client, "one", answers, stream=True))
            tg.start_soon(lambda: _ask(client, "two", answers))
            await held.until(2)
            with pytest.raises(openai.RateLimitError) as refused:
                await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "three"}])
            held.release.set()
        assert refused.value.response.headers["retry-after"] == "1"
        assert "2 requests at once" in refused.value.message
        assert sorted(answers) == ["answered one", "answered two"]
        held.release = anyio.Event()  # both slots are free again: two more are taken at once
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: _ask(client, "four", answers, stream=True))
            tg.start_soon(lambda: _ask(client, "five", answers))
            await held.until(2)
            held.release.set()
    assert sorted(answers[2:]) == ["answered five", "answered four"]
