"""The OpenAI chat-completions API as msgspec Structs: what the HTTP entry reads and writes.

Only the part of the API a chat client needs to talk to ontoflow: a request with ``messages``
(and ``stream``), an answer as one ``chat.completion`` or as a stream of
``chat.completion.chunk`` events, and the error body. Requests are decoded strictly in their
types but tolerate fields every SDK sends (``temperature``...): refusing them would refuse the
SDKs. What the entry honours (``stop``, ``max_tokens``) or refuses (a field it cannot honour)
is decided in ``runtime.http``. Nothing here does I/O.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

__all__ = [
    "ChatChoice",
    "ChatCompletion",
    "ChatCompletionChunk",
    "ChatCompletionRequest",
    "ChatDelta",
    "ChatError",
    "ChatErrorBody",
    "ChatMessage",
    "ChatModel",
    "ChatModelList",
    "ChatUsage",
    "ChunkChoice",
    "ContentPart",
    "message_text",
]


class ContentPart(msgspec.Struct, frozen=True):
    """One part of a message's content given as a list (only ``text`` parts carry text)."""

    type: str
    text: str | None = None


class ChatMessage(msgspec.Struct, frozen=True, omit_defaults=True):
    """One message of the conversation, as clients send it and as the answer carries it."""

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[ContentPart] | None = None
    name: str | None = None


class ChatCompletionRequest(msgspec.Struct, frozen=True):
    """``POST /v1/chat/completions``: the conversation so far; its last message is the user's.

    Attributes:
        model: any name of at most 256 characters; ontoflow answers every model with the same
            deterministic runtime, and echoes the name in its answer (so a longer one is refused).
        messages: the whole conversation, oldest first (clients re-send it every turn).
        stream: answer as server-sent events (``chat.completion.chunk``).
        user: an end-user id (who asks, not which conversation): it keeps one person's
            conversations apart from another's, never joins them into one session.
        metadata: free strings; ``session_id`` in it names the session, ``run: "true"``
            asks for a run (``ask --run``).
        n: how many choices; ontoflow answers one, so only 1 is taken (OpenAI's own API
            answers 400 to a value it cannot serve rather than fewer choices).
        max_tokens, max_completion_tokens: the answer is cut after that many words (the entry
            counts words, not tokens; ``finish_reason`` ``length``).
        temperature: ignored (the answer is deterministic), but held to OpenAI's range, so a
            request the API refuses is refused here too.
    """

    model: Annotated[str, msgspec.Meta(max_length=256)]
    messages: list[ChatMessage]
    stream: bool = False
    user: str | None = None
    metadata: dict[str, str] | None = None
    n: Annotated[int, msgspec.Meta(ge=1, le=1)] | None = None
    max_tokens: Annotated[int, msgspec.Meta(ge=1)] | None = None
    max_completion_tokens: Annotated[int, msgspec.Meta(ge=1)] | None = None
    temperature: Annotated[float, msgspec.Meta(ge=0, le=2)] | None = None


class ChatUsage(msgspec.Struct, frozen=True):
    """Token counts (ontoflow counts words: no model tokenises anything here)."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatChoice(msgspec.Struct, frozen=True):
    """The one answer of a ``chat.completion``."""

    index: int
    message: ChatMessage
    finish_reason: str
    logprobs: None = None


class ChatCompletion(msgspec.Struct, frozen=True):
    """A whole answer."""

    id: str
    created: int
    model: str
    choices: list[ChatChoice]
    usage: ChatUsage
    object: str = "chat.completion"
    system_fingerprint: str | None = None


class ChatDelta(msgspec.Struct, frozen=True, omit_defaults=True):
    """What one chunk adds to the answer."""

    role: str | None = None
    content: str | None = None


class ChunkChoice(msgspec.Struct, frozen=True):
    """The answer's part in one chunk; ``finish_reason`` only on the last."""

    index: int
    delta: ChatDelta
    finish_reason: str | None = None
    logprobs: None = None


class ChatCompletionChunk(msgspec.Struct, frozen=True):
    """One server-sent event of a streamed answer."""

    id: str
    created: int
    model: str
    choices: list[ChunkChoice]
    object: str = "chat.completion.chunk"
    system_fingerprint: str | None = None


class ChatModel(msgspec.Struct, frozen=True):
    """One entry of ``GET /v1/models``."""

    id: str
    created: int
    owned_by: str = "ontoflow"
    object: str = "model"


class ChatModelList(msgspec.Struct, frozen=True):
    """``GET /v1/models``."""

    data: list[ChatModel]
    object: str = "list"


class ChatErrorBody(msgspec.Struct, frozen=True):
    """The OpenAI error shape: what was wrong (``message``), of which kind, about which field."""

    message: str
    type: str
    param: str | None = None
    code: str | None = None


class ChatError(msgspec.Struct, frozen=True):
    """The body of every error answer."""

    error: ChatErrorBody


def message_text(message: ChatMessage) -> str:
    """The text of a message: its string content, or its ``text`` parts joined by newlines."""
    content: Any = message.content
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(part.text for part in content if part.type == "text" and part.text)
