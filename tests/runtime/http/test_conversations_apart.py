"""Two conversations the HTTP entry cannot tell apart never go on in each other's session.

Chat-completions clients name no session, so the entry keys a conversation by its history. Two
people who open with the same sentence and get the same answer (a question back: "which
company?", "shall I run it?") have the same history; the next turn of the first went on in
the second's session, answering the question the second one's run asked."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import openai
import pytest

from ontoflow.protocols.chat_completions import ChatMessage
from ontoflow.runtime.http import ConversationBook, HttpEntryConfig, Reply, conversation_key, serve_http_entry

pytestmark = pytest.mark.anyio

QUESTION = "To get the price of a stock I need: the company or ticker, as you said it."


class Sessions:
    """Answers every first turn with the same question, and records each turn's session."""

    def __init__(self) -> None:
        self.turns: list[tuple[str, str]] = []

    async def __call__(self, session_id: str, text: str, *, channel: str, run: bool = False) -> Reply:
        self.turns.append((text, session_id))
        return Reply(text=QUESTION if text == "qual o preço?" else f"answered {text}", status="success")


@pytest.fixture
async def entry() -> AsyncIterator[tuple[openai.AsyncOpenAI, Sessions, list[tuple[str, str]]]]:
    sessions, told = Sessions(), []
    book = ConversationBook(on_remember=lambda key, sid: told.append((key, sid)))
    async with anyio.create_task_group() as tg:
        address = await tg.start(lambda task_status: serve_http_entry(
            HttpEntryConfig(bind="127.0.0.1:0"), sessions, conversations=book, task_status=task_status))
        async with openai.AsyncOpenAI(base_url=f"{address}/v1", api_key="unused", max_retries=0, timeout=20) as client:
            yield client, sessions, told
        tg.cancel_scope.cancel()


async def _say(client: openai.AsyncOpenAI, history: list[dict[str, str]], text: str) -> list[dict[str, str]]:
    messages = [*history, {"role": "user", "content": text}]
    done = await client.chat.completions.create(model="ontoflow", messages=messages)  # type: ignore[arg-type]
    return [*messages, {"role": "assistant", "content": done.choices[0].message.content or ""}]


async def test_two_conversations_with_the_same_opening_go_on_apart(entry) -> None:
    client, sessions, told = entry
    alice = await _say(client, [], "qual o preço?")
    bob = await _say(client, [], "qual o preço?")
    first_alice, first_bob = sessions.turns[0][1], sessions.turns[1][1]
    assert first_alice != first_bob
    alice = await _say(client, alice, "Nordea")
    bob = await _say(client, bob, "Vale")
    second_alice, second_bob = sessions.turns[2][1], sessions.turns[3][1]
    # Before: both went on in Bob's session (the later one recorded under the shared history).
    assert second_alice not in (first_bob, second_bob) and second_bob not in (first_alice, second_alice)
    assert told[1][1] == "" and len({key for key, _ in told[:2]}) == 1  # journaled as ambiguous
    # From then on each conversation is its own again.
    await _say(client, alice, "e da Petrobras?")
    await _say(client, bob, "e da Petrobras?")
    assert sessions.turns[4][1] == second_alice and sessions.turns[5][1] == second_bob


async def test_the_same_conversation_sent_again_stays_in_its_session(entry) -> None:
    client, sessions, told = entry
    alice = await _say(client, [], "qual o preço?")
    again = await _say(client, alice, "Nordea")
    await _say(client, alice, "Nordea")  # a client's retry of the same turn
    assert sessions.turns[1][1] == sessions.turns[2][1] == sessions.turns[0][1]
    await _say(client, again, "e da Vale?")
    assert sessions.turns[3][1] == sessions.turns[0][1] and "" not in [sid for _, sid in told]


def test_an_ambiguous_history_kept_before_a_restart_starts_a_session_of_its_own() -> None:
    shared = [ChatMessage(role="user", content="qual o preço?"), ChatMessage(role="assistant", content=QUESTION)]
    book = ConversationBook(known=[(conversation_key(shared), "http-bob"), (conversation_key(shared), "")])
    fresh = book.session_for(shared)
    assert fresh.startswith("http-") and fresh != "http-bob" and book.session_for(shared) != fresh
