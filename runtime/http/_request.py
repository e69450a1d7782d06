"""What a chat request may ask of the HTTP entry: the fields it honours, and those it refuses.

``protocols.chat_completions.ChatCompletionRequest`` decodes what every request carries and
tolerates fields it does not name. Some of those change what an OpenAI client expects back, and
ignoring them answered something else than was asked, with a 200: a content part that is not
text (an image, audio, a file) was dropped and the answer given to the words around it; a
stream that asked for its usage got none; a request for JSON, for a tool call or for log
probabilities got plain text. So the entry reads them here (``EntryRequest``) and:

* honours ``stream_options.include_usage`` (a last chunk with ``usage`` and no choices, before
  ``[DONE]``), ``stop`` (the answer cut before the first stop sequence) and ``max_tokens`` /
  ``max_completion_tokens`` (the answer cut after that many words, ``finish_reason: length``:
  the entry counts words where a model counts tokens, in ``usage`` too);
* refuses with a 400 naming the field (never its value) what it cannot do: a content part
  other than ``text`` (``refusal`` too in an assistant's message), ``tool_choice`` or
  ``function_call`` demanding a call, a ``response_format`` other than ``text``, ``logprobs``,
  an audio output, ``stream_options`` without ``stream``;
* takes ``tools`` and ``functions`` without calling any (``tool_choice: auto`` lets a model
  answer in words), and ignores settings that only shape sampling (``seed``, ``top_p``,
  penalties: the answer is deterministic), held to OpenAI's ranges all the same.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import msgspec
from starlette.responses import Response

from ontoflow.protocols.chat_completions import ChatCompletionRequest, ChatMessage, ChatUsage, message_text
from ontoflow.runtime.http._errors import error
from ontoflow.runtime.http._reply import Reply

__all__ = ["EntryRequest", "StreamOptions", "as_asked", "unsupported", "usage_of"]

#: The content part types the entry reads, by the role of the message that carries them.
_PARTS = {"assistant": ("refusal", "text")}
_TEXT_ONLY = ("text",)
_WORD = re.compile(r"\S+")


class StreamOptions(msgspec.Struct, frozen=True):
    """``stream_options``: ``include_usage`` asks for a last chunk with the usage."""

    include_usage: bool = False


class EntryRequest(ChatCompletionRequest, frozen=True):
    """A chat request with the fields the entry honours or refuses (the module's docstring)."""

    stream_options: StreamOptions | None = None
    stop: str | Annotated[list[str], msgspec.Meta(max_length=4)] | None = None
    tools: list[Any] | None = None
    tool_choice: str | dict[str, Any] | None = None
    functions: list[Any] | None = None
    function_call: str | dict[str, Any] | None = None
    response_format: dict[str, Any] | None = None
    logprobs: bool | None = None
    top_logprobs: Annotated[int, msgspec.Meta(ge=0, le=20)] | None = None
    # Ignored (the answer is deterministic), but held to OpenAI's ranges like ``temperature``:
    # a request the API refuses is refused here too.
    top_p: Annotated[float, msgspec.Meta(ge=0, le=1)] | None = None
    presence_penalty: Annotated[float, msgspec.Meta(ge=-2, le=2)] | None = None
    frequency_penalty: Annotated[float, msgspec.Meta(ge=-2, le=2)] | None = None
    modalities: list[str] | None = None
    audio: dict[str, Any] | None = None


def _bad(message: str, param: str) -> Response:
    return error(400, f"{param}: {message}", "invalid_request_error", param=param, code="invalid_value")


def unsupported(chat: EntryRequest) -> Response | None:
    """The 400 for the first thing ``chat`` asks that the entry cannot do; None when none."""
    for i, message in enumerate(chat.messages):
        if isinstance(message.content, list):
            allowed = _PARTS.get(message.role, _TEXT_ONLY)
            for j, part in enumerate(message.content):
                at = f"messages[{i}].content[{j}]"
                if part.type not in allowed:
                    return _bad(f"a content part of a type this entry does not read; it reads {' and '.join(allowed)} "
                                "parts (no image, audio or file)", f"{at}.type")
                if part.type == "text" and part.text is None:
                    return _bad("a text part needs its text", f"{at}.text")
    if chat.stream_options is not None and not chat.stream:
        return _bad("only allowed when stream is true", "stream_options")
    for name in ("tool_choice", "function_call"):
        choice = getattr(chat, name)
        if choice is not None and choice not in ("auto", "none"):
            return _bad("this entry calls no tool; it takes auto or none", name)
    if chat.response_format is not None and chat.response_format.get("type") != "text":
        return _bad("this entry answers text; it takes {\"type\": \"text\"} only", "response_format.type")
    if chat.logprobs or (chat.top_logprobs or 0) > 0:
        return _bad("this entry gives no log probabilities", "logprobs" if chat.logprobs else "top_logprobs")
    if chat.audio is not None or any(m != "text" for m in chat.modalities or ()):
        return _bad("this entry answers text only", "audio" if chat.audio is not None else "modalities")
    return None


def as_asked(reply: Reply, chat: EntryRequest) -> tuple[Reply, str]:
    """``reply`` cut as ``chat`` asks (``stop``, then ``max_tokens`` in words) and its finish reason."""
    text, finish = reply.text, "stop"
    stops = [chat.stop] if isinstance(chat.stop, str) else chat.stop or []
    cuts = [at for at in (text.find(s) for s in stops if s) if at >= 0]
    if cuts:
        text = text[: min(cuts)]
    limit = min((n for n in (chat.max_tokens, chat.max_completion_tokens) if n is not None), default=None)
    if limit is not None:
        words = list(_WORD.finditer(text))
        if len(words) > limit:
            text, finish = text[: words[limit - 1].end()], "length"
    return (reply if text == reply.text else msgspec.structs.replace(reply, text=text)), finish


def usage_of(messages: list[ChatMessage], answer: str) -> ChatUsage:
    """The usage of a turn, in words (no model tokenises anything here)."""
    prompt = sum(len(_WORD.findall(message_text(m))) for m in messages)
    completion = len(_WORD.findall(answer))
    return ChatUsage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)
