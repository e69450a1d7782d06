"""A streamed answer's server-sent events, as OpenAI's API sends them.

The first chunk carries the role, the answer follows a line per chunk, the last chunk carries
``finish_reason``; a request with ``stream_options.include_usage`` gets one more with no
choices and the turn's ``usage`` (as OpenAI's API sends it), then ``data: [DONE]``. An error
after the stream began is an event with the API's error body (the openai SDK raises it as
``APIError``).
"""

from __future__ import annotations

import msgspec

from ontoflow.protocols.chat_completions import (
    ChatCompletionChunk,
    ChatDelta,
    ChatError,
    ChatErrorBody,
    ChatUsage,
    ChunkChoice,
)
from ontoflow.runtime.http._reply import Reply

__all__ = ["chunks", "error_event", "event"]

_encode = msgspec.json.encode


def event(completion_id: str, created: int, model: str, fingerprint: str, delta: ChatDelta,
          finish: str | None = None) -> bytes:
    """One ``chat.completion.chunk`` event carrying ``delta`` (and ``finish`` on the last)."""
    chunk = ChatCompletionChunk(id=completion_id, created=created, model=model,
                                choices=[ChunkChoice(index=0, delta=delta, finish_reason=finish)],
                                system_fingerprint=fingerprint)
    return b"data: " + _encode(chunk) + b"\n\n"


class _UsageChunk(msgspec.Struct, frozen=True):
    """The last chunk of a stream that asked for its usage: no choices, the usage."""

    id: str
    created: int
    model: str
    usage: ChatUsage
    choices: list[ChunkChoice] = []
    object: str = "chat.completion.chunk"
    system_fingerprint: str | None = None


def error_event(message: str, kind: str, code: str | None = None) -> bytes:
    """An error after a stream began, as OpenAI sends one (the openai SDK raises it as ``APIError``)."""
    return b"data: " + _encode(ChatError(ChatErrorBody(message=message, type=kind, param=None, code=code))) + b"\n\n"


def _pieces(text: str) -> list[str]:
    """The answer cut after each line, so a streaming client shows it as it would a model's."""
    lines = text.splitlines(keepends=True)
    return lines or [text]


def chunks(completion_id: str, created: int, model: str, reply: Reply, finish: str = "stop",
           usage: ChatUsage | None = None) -> list[bytes]:
    """The answer's chunks after the first (the role's), its end (``finish``), the ``usage``
    chunk when given, and ``[DONE]``."""
    fingerprint = f"ontoflow-{reply.status}"
    pieces = [event(completion_id, created, model, fingerprint, ChatDelta(content=p)) for p in _pieces(reply.text)]
    last = [] if usage is None else [b"data: " + _encode(_UsageChunk(id=completion_id, created=created, model=model,
                                                                     usage=usage, system_fingerprint=fingerprint))
                                     + b"\n\n"]
    return [*pieces, event(completion_id, created, model, fingerprint, ChatDelta(), finish), *last, b"data: [DONE]\n\n"]
