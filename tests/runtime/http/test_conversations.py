"""The HTTP entry's conversation book: what an earlier daemon kept comes back (``known``), and
each conversation recorded is told (``on_remember``), so the daemon can journal it."""

from __future__ import annotations

from ontoflow.protocols.chat_completions import ChatMessage
from ontoflow.runtime.http import ConversationBook, conversation_key


def test_a_known_conversation_names_its_session_and_each_new_one_is_told() -> None:
    earlier = [ChatMessage(role="user", content="qual o preço da Nordea?"), ChatMessage(role="assistant", content="Which one?")]
    told: list[tuple[str, str]] = []
    book = ConversationBook(2, known=[(conversation_key(earlier), "http-1")], on_remember=lambda k, s: told.append((k, s)))
    assert book.session_for(earlier) == "http-1"  # the next turn of a conversation kept before
    later = [*earlier, ChatMessage(role="user", content="2"), ChatMessage(role="assistant", content="9.84 EUR")]
    book.remember(later, "http-1")
    assert told == [(conversation_key(later), "http-1")]
    fresh = book.session_for([ChatMessage(role="user", content="hi")])
    assert fresh.startswith("http-") and fresh != "http-1"


def test_known_pairs_beyond_the_capacity_keep_the_newest() -> None:
    book = ConversationBook(1, known=[("k1", "s1"), ("k2", "s2")])
    assert len(book) == 1
