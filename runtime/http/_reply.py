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
        refused: set when the runtime did not take the turn at all (``text`` says why): the
            entry answers an error status rather than an answer, so a client retries as it
            would against OpenAI, and the conversation keeps no such turn: ``busy`` (429, at
            its run limit), ``internal`` (500), any other code (503: ``shutting_down``,
            ``unavailable``, ``no_domains``, ``adapter_failed``: the model endpoint failed, after
            the adapter's own retries, so the answer also says ``x-should-retry: false``, which
            the openai SDK obeys).
        retry_after_s: when a refused turn may be asked again (the ``Retry-After`` header).
    """

    text: str
    status: Literal["success", "failure", "clarification"] = "success"
    run_id: str | None = None
    metadata: dict[str, Any] = {}
    refused: str | None = None
    retry_after_s: float | None = None


class Answerer(Protocol):
    """Answers one turn: ``await answer(session_id, text, channel="http", run=False)``
    (``run``: the request's ``metadata.run`` flag, run what the turn makes).

    It must not raise for bad input (that is a ``failure`` or a ``clarification`` Reply); an
    exception is a bug, answered 500 without its text. The call is cancelled when the HTTP
    client goes away before the answer: it withdraws the turn (the daemon's edge cancels the
    run it started and asks the model nothing more for it).
    """

    async def __call__(self, session_id: str, text: str, *, channel: str, run: bool = False) -> Reply:
        """The reply to ``text`` in the session ``session_id``."""
        ...
