"""OpenAI's ``user`` is who asks (an end-user id, for abuse tracking), not which conversation:
a client that sends the same ``user`` in all of one person's conversations (as the API asks
it to) had them all in one session, so a question asked in one window ("which Nordea?") was
answered by whatever the person typed next in another, and the history of one leaked into
the follow-ups of the other. Conversations are now found by their history, apart for each
``user``; ``metadata.session_id`` still names a session across conversations, apart for each
``user`` too."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import openai
import pytest

from ontoflow.runtime.http import HttpEntryConfig, Reply, serve_http_entry

pytestmark = pytest.mark.anyio


class Sessions:
    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []  # (session, text)

    async def __call__(self, session_id: str, text: str, *, channel: str, run: bool = False) -> Reply:
        self.asked.append((session_id, text))
        return Reply(text="Which Nordea?" if "Nordea" in text else "R$ 60")


@pytest.fixture
async def entry() -> AsyncIterator[tuple[openai.AsyncOpenAI, Sessions]]:
    sessions = Sessions()
    async with anyio.create_task_group() as tg:
        address = await tg.start(serve_http_entry, HttpEntryConfig(bind="127.0.0.1:0"), sessions)
        async with openai.AsyncOpenAI(base_url=f"{address}/v1", api_key="unused", max_retries=0, timeout=20) as client:
            yield client, sessions
        tg.cancel_scope.cancel()


async def _turn(client: openai.AsyncOpenAI, history: list[dict], text: str, **extra) -> list[dict]:
    messages = [*history, {"role": "user", "content": text}]
    done = await client.chat.completions.create(model="m", messages=messages, **extra)  # type: ignore[arg-type]
    return [*messages, {"role": "assistant", "content": done.choices[0].message.content}]


async def test_one_users_two_conversations_are_two_sessions(entry) -> None:
    client, sessions = entry
    window_a = await _turn(client, [], "qual o preço da Nordea?", user="ada")
    window_b = await _turn(client, [], "qual o preço da Vale?", user="ada")
    await _turn(client, window_a, "a sueca", user="ada")  # answers window A's question
    await _turn(client, window_b, "e da Petrobras?", user="ada")  # a follow-up in window B
    (a1, _), (b1, _), (a2, _), (b2, _) = sessions.asked
    assert a1 != b1  # two conversations, not one session called "ada"
    assert a2 == a1 and b2 == b1  # each goes on in its own
    assert "ada" not in (a1, b1)


async def test_two_users_whose_conversations_open_alike_each_keep_their_own(entry) -> None:
    # Same words, same answer: without ``user`` these cannot be told apart (each next turn
    # starts afresh, ``test_conversations_apart``); with it, each goes on in its session.
    client, sessions = entry
    ada = await _turn(client, [], "qual o preço da Nordea?", user="ada")
    bob = await _turn(client, [], "qual o preço da Nordea?", user="bob")
    await _turn(client, ada, "a sueca", user="ada")
    await _turn(client, bob, "a finlandesa", user="bob")
    (ada1, _), (bob1, _), (ada2, _), (bob2, _) = sessions.asked
    assert ada1 != bob1 and ada2 == ada1 and bob2 == bob1


async def test_any_end_user_id_is_taken(entry) -> None:
    # An e-mail or a UUID with braces is an end-user id as OpenAI takes it; it was a 400
    # ("a session id must be 1-64 characters ...").
    client, sessions = entry
    await _turn(client, [], "qual o preço da Vale?", user="ada.lovelace+chat@example.org")
    await _turn(client, [], "qual o preço da Vale?", user="{" + "f" * 80 + "}")
    assert len(sessions.asked) == 2


async def test_metadata_session_id_still_names_the_session_across_conversations(entry) -> None:
    client, sessions = entry
    await _turn(client, [], "qual o preço da Nordea?", user="ada", metadata={"session_id": "desk-1"})
    await _turn(client, [], "a sueca", user="ada", metadata={"session_id": "desk-1"})
    (first, _), (second, _) = sessions.asked
    assert first == second  # one session across the two conversations


async def test_a_named_session_is_apart_for_each_user(entry) -> None:
    # Two people's apps that both name their session "desk-1": the question asked in ada's is
    # never answered by bob's next sentence. Without ``user`` the name is the session as given
    # (what ``ask --session desk-1`` names too).
    client, sessions = entry
    await _turn(client, [], "qual o preço da Nordea?", user="ada", metadata={"session_id": "desk-1"})
    await _turn(client, [], "a finlandesa", user="bob", metadata={"session_id": "desk-1"})
    await _turn(client, [], "a sueca", metadata={"session_id": "desk-1"})
    ada, bob, nobody = (s for s, _ in sessions.asked)
    assert len({ada, bob, nobody}) == 3 and nobody == "desk-1"
