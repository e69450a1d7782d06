"""What the HTTP entry asks of the runtime behind it: one turn of a conversation answered.

The entry knows nothing of intents, goals or plans: the composition root hands it an
:class:`Answerer` (the daemon's or the embedded edge), and the entry turns each chat request
into one call and the :class:`Reply` into the chat-completions answer.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

import msgspec

__all__ = ["Answerer", "Reply"]


class Reply(msgspec.Struct, frozen=True, kw_only=True):
    """The runtime's answer to one turn.

    Attributes:
        text: what the person reads (a result, an error in words, or a question).
        status: ``success``, ``failure`` or ``clarification`` (a question the next message
            answers; the conversation resumes where it stopped).
        run_id: the run the turn started or resumed, if any.
        metadata: small facts for clients that read them (never parameter values).
    """

    text: str
    status: Literal["success", "failure", "clarification"] = "success"
    run_id: str | None = None
    metadata: dict[str, Any] = {}


class Answerer(Protocol):
    """Answers one turn: ``await answer(session_id, text, channel="http", run=False)``
    (``run``: the request's ``metadata.run`` flag, run what the turn makes).

    It must not raise for bad input (that is a ``failure`` or a ``clarification`` Reply); an
    exception is a bug, answered 500 without its text.
    """

    async def __call__(self, session_id: str, text: str, *, channel: str, run: bool = False) -> Reply:
        """The reply to ``text`` in the session ``session_id``."""
        ...
