"""Which session a chat request belongs to, for clients that send no session id.

Chat-completions clients re-send the whole conversation every turn and name no session. A
request names its session by ``metadata.session_id`` when the client sets it; otherwise the
conversation *is* the key: the history before the last user message is hashed,
and after each answer the history including that answer is recorded under the same session.
The next turn of the same conversation then hashes to it, whichever client sent it, so a
clarification asked in one turn is answered in the next. The book is bounded (least recently
used first out); a conversation it forgot starts a new session, it is never confused with
another one. Nor is one it cannot tell apart: two conversations that opened with the same
words and got the same answer (two people asking "qual o preço?", or one asking in two
windows) hash the same, and the next turn of either would have gone on in the other's session
(answering the question the other's run asked: confirming, or cancelling, someone else's
run). Such a history is kept as :data:`AMBIGUOUS`, and the next turn of each starts a session
of its own. The daemon keeps the book in its journal: it hands the book what it kept
(``known``) and is told of each conversation recorded (``on_remember``, ambiguity too), so a
conversation goes on after a restart.

OpenAI's ``user`` is who is asking (an end-user id, for abuse tracking), not which
conversation: a client sends the same one in every conversation of one person, so as a session
id it joined them all into one (a question asked in one window answered by a sentence typed in
another). It *scopes* the history instead (``scope``): one person's conversations are still
told apart by their histories, and two people's conversations that open alike are never
confused, nor ambiguous. A session the request names (``metadata.session_id``) is scoped by
``user`` likewise (``named_session``): two people who both name theirs "support" each get
their own, and a question asked in one is never answered from the other.
"""

from __future__ import annotations

import hashlib
import secrets
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence

import msgspec
import structlog

from ontoflow.protocols.chat_completions import ChatMessage, message_text

__all__ = ["AMBIGUOUS", "ConversationBook", "conversation_key", "named_session"]

log = structlog.get_logger()

#: The session recorded for a history two conversations share (never a session id: those are
#: 1-64 characters).
AMBIGUOUS = ""

_encoder = msgspec.msgpack.Encoder(order="deterministic")


def conversation_key(messages: Sequence[ChatMessage], scope: str | None = None) -> str:
    """A digest of ``messages`` by role and text (the same conversation hashes the same), apart
    for each ``scope`` (the request's ``user``; without one, the digest kept since before scopes)."""
    pairs = [(m.role, message_text(m)) for m in messages if m.role in ("user", "assistant")]
    return hashlib.sha256(_encoder.encode(pairs if scope is None else [scope, pairs])).hexdigest()


def named_session(session_id: str, scope: str | None) -> str:
    """The session a request names as ``session_id``, apart for each ``scope`` (the request's
    ``user``; without one, the name as given, shared with ``ask --session`` of that name).

    A digest of both (41 characters, itself a valid session id): a scoped name never equals an
    unscoped one a client could type, short of typing the digest.
    """
    if not scope:
        return session_id
    return "u" + hashlib.sha256(f"{scope}\n{session_id}".encode()).hexdigest()[:40]


class ConversationBook:
    """Maps conversation histories to session ids (see the module docstring).

    Args:
        capacity: how many conversations are remembered.
        known: ``(conversation key, session id)`` pairs to start with, oldest first (what an
            earlier run of the daemon kept).
        on_remember: called with ``(key, session id)`` each time a conversation is recorded.
    """

    def __init__(self, capacity: int = 10_000, *, known: Iterable[tuple[str, str]] = (),
                 on_remember: Callable[[str, str], None] | None = None) -> None:
        if capacity < 1:
            raise ValueError("capacity must be >= 1")
        self._capacity = capacity
        self._sessions: OrderedDict[str, str] = OrderedDict()
        self._on_remember = on_remember
        for key, session_id in known:
            self._keep(key, session_id)

    def __len__(self) -> int:
        return len(self._sessions)

    def session_for(self, history: Sequence[ChatMessage], scope: str | None = None) -> str:
        """The session of a conversation whose earlier turns are ``history``, asked by
        ``scope`` (the request's ``user``), or a new one when the book does not know it."""
        key = conversation_key(history, scope)
        found = self._sessions.get(key)
        if found is not None:
            self._sessions.move_to_end(key)
            if found != AMBIGUOUS:
                return found
        return f"http-{secrets.token_hex(8)}"

    def remember(self, history: Sequence[ChatMessage], session_id: str, scope: str | None = None) -> None:
        """Record that the conversation ``history`` (answer included) of ``scope`` is
        ``session_id``, or :data:`AMBIGUOUS` when another session's conversation hashes the same."""
        key = conversation_key(history, scope)
        known = self._sessions.get(key)
        if known is not None and known != session_id:
            if known != AMBIGUOUS:
                log.info("http_conversation_ambiguous", turns=len(history))
            session_id = AMBIGUOUS
        self._keep(key, session_id)
        if self._on_remember is not None:
            self._on_remember(key, session_id)

    def _keep(self, key: str, session_id: str) -> None:
        self._sessions[key] = session_id
        self._sessions.move_to_end(key)
        while len(self._sessions) > self._capacity:
            self._sessions.popitem(last=False)
