"""Which session a chat request belongs to, for clients that send no session id.

Chat-completions clients re-send the whole conversation every turn and name no session. A
request names its session by ``user`` or ``metadata.session_id`` when the client sets them;
otherwise the conversation *is* the key: the history before the last user message is hashed,
and after each answer the history including that answer is recorded under the same session.
The next turn of the same conversation then hashes to it, whichever client sent it, so a
clarification asked in one turn is answered in the next. The book is bounded (least recently
used first out); a conversation it forgot starts a new session, it is never confused with
another one.
"""

from __future__ import annotations

import hashlib
import secrets
from collections import OrderedDict
from collections.abc import Sequence

import msgspec

from ontoflow.protocols.chat_completions import ChatMessage, message_text

__all__ = ["ConversationBook", "conversation_key"]

_encoder = msgspec.msgpack.Encoder(order="deterministic")


def conversation_key(messages: Sequence[ChatMessage]) -> str:
    """A digest of ``messages`` by role and text (the same conversation hashes the same)."""
    pairs = [(m.role, message_text(m)) for m in messages if m.role in ("user", "assistant")]
    return hashlib.sha256(_encoder.encode(pairs)).hexdigest()


class ConversationBook:
    """Maps conversation histories to session ids (see the module docstring).

    Args:
        capacity: how many conversations are remembered.
    """

    def __init__(self, capacity: int = 10_000) -> None:
        if capacity < 1:
            raise ValueError("capacity must be >= 1")
        self._capacity = capacity
        self._sessions: OrderedDict[str, str] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sessions)

    def session_for(self, history: Sequence[ChatMessage]) -> str:
        """The session of a conversation whose earlier turns are ``history`` (a new one when
        the book does not know it)."""
        key = conversation_key(history)
        found = self._sessions.get(key)
        if found is not None:
            self._sessions.move_to_end(key)
            return found
        return f"http-{secrets.token_hex(8)}"

    def remember(self, history: Sequence[ChatMessage], session_id: str) -> None:
        """Record that the conversation ``history`` (answer included) is ``session_id``."""
        key = conversation_key(history)
        self._sessions[key] = session_id
        self._sessions.move_to_end(key)
        while len(self._sessions) > self._capacity:
            self._sessions.popitem(last=False)
