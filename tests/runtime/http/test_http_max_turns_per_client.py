"""One client cannot take every turn of the HTTP entry: past ``max_turns_per_client`` requests
at once from its address it alone is answered 429 (the official ``openai`` client's
``RateLimitError``), while a client from another address is still served.

Before, the entry's bound (``max_turns``, 64) was one count for everybody: a client holding 64
streams to a slow model had every other client answered 429 until it let go."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import httpx2
import openai
import pytest

from ontoflow.runtime.http import HttpEntryConfig, Reply, serve_http_entry
from ontoflow.runtime.http._slots import TurnSlots

pytestmark = pytest.mark.anyio


class _Held:
    """Holds every turn until released; ``inside`` counts those held."""

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


def _client(address: str, source: str, retries: int = 0) -> openai.AsyncOpenAI:
    """An openai client whose connections leave from ``source`` (127.0.0.2 is loopback too)."""
    http = httpx2.AsyncClient(transport=httpx2.AsyncHTTPTransport(local_address=source))
    return openai.AsyncOpenAI(base_url=f"{address}/v1", api_key="unused", max_retries=retries, timeout=60, http_client=http)


@pytest.fixture
async def entry() -> AsyncIterator[tuple[str, _Held]]:
    held = _Held()
    config = HttpEntryConfig(bind="127.0.0.1:0", max_turns=4, max_turns_per_client=2)
    async with anyio.create_task_group() as tg:
        yield await tg.start(serve_http_entry, config, held), held
        tg.cancel_scope.cancel()


async def _ask(client: openai.AsyncOpenAI, text: str, answers: list[str], *, stream: bool = False) -> None:
    messages = [{"role": "user", "content": text}]
    if stream:
        chunks = await client.chat.completions.create(model="m", messages=messages, stream=True)
        answers.append("".join([c.choices[0].delta.content or "" async for c in chunks if c.choices]))
    else:
        done = await client.chat.completions.create(model="m", messages=messages)
        answers.append(done.choices[0].message.content or "")


async def test_a_client_at_its_share_is_refused_and_another_client_is_served(entry) -> None:
    address, held = entry
    answers: list[str] = []
    async with _client(address, "127.0.0.1") as greedy, _client(address, "127.0.0.2") as other:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: _ask(greedy, "one", answers, stream=True))
                tg.start_soon(lambda: _ask(greedy, "two", answers))
                await held.until(2)
                with pytest.raises(openai.RateLimitError) as refused:
                    await greedy.chat.completions.create(model="m", messages=[{"role": "user", "content": "three"}])
                tg.start_soon(lambda: _ask(other, "four", answers, stream=True))
                await held.until(3)  # the other client's turn is taken while the greedy one holds its share
                held.release.set()
    assert refused.value.response.headers["retry-after"] == "1"
    assert "2 requests at once from one client" in refused.value.message
    assert sorted(answers) == ["answered four", "answered one", "answered two"]


def test_the_slots_count_each_client_and_forget_one_that_holds_none() -> None:
    slots = TurnSlots(3, 2)
    assert [slots.take("a"), slots.take("a"), slots.take("a"), slots.take("b"), slots.take("c")] == [
        None, None, "client", None, "entry"]
    slots.give_back("a")
    slots.give_back("a")
    slots.give_back("b")
    assert (slots.working, slots._by_client) == (0, {})
    assert TurnSlots(2, 16).per_client == 2


async def test_streams_closed_midway_give_their_client_share_back(entry) -> None:
    address, held = entry
    # Retries: a closed stream's slot comes back just after its turn is withdrawn, which a quick
    # next request may beat (a 429 the openai client retries after Retry-After).
    async with _client(address, "127.0.0.1", retries=3) as client:
        with anyio.fail_after(30):
            for _ in range(3):  # each round takes the whole share and closes it before the answer
                streams = [await client.chat.completions.create(model="m", stream=True, messages=[
                    {"role": "user", "content": "hold"}]) for _ in range(2)]
                await held.until(2)
                for stream in streams:
                    await stream.close()
                await held.until(0)  # the turns behind were withdrawn
            held.release.set()
            answers: list[str] = []
            await _ask(client, "after", answers)
    assert answers == ["answered after"]
