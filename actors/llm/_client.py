"""A chat-completions client for any OpenAI-compatible endpoint, over httpx.

One call, one answer: ``await client.chat(messages, tools=..., tool_choice=...)`` returns the
first choice's text and tool calls. What can go wrong becomes a typed error the capability
base classifies (``errors``): 429 and 5xx, a refused or timed-out connection are transient (the
base retries them with backoff and jitter); 4xx, a redirect and an answer that is not a chat
completion are permanent. The key goes only into the ``Authorization`` header: no log line,
error or repr shows it, nor any prompt or answer text (log lines carry sizes and counts).

The endpoint is untrusted: one exchange has one budget, ``timeout_s``, from connecting to the
last byte (httpx's own timeouts are per read, so an answer trickling a byte at a time never
ended); the body is read in pieces and refused past ``max_answer_bytes``, by its declared
length when it has one (a huge answer is never held in memory); a redirect is not followed
(the key would travel with it to wherever it points). A 429 or 503 that says when to come back
(``Retry-After`` in seconds or as a date, or OpenAI's ``retry-after-ms``) is waited for and
asked again, up to ``retry_after_waits`` times and ``max_retry_after_s`` each; a longer wait is
``LlmBackOffError``, not retried (the capability base's backoff would only ask again too soon).
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from email.utils import parsedate_to_datetime
from typing import Any

import anyio
import httpx
import msgspec
import structlog

from ontoflow.actors.llm._config import LlmConfig, shown_url
from ontoflow.actors.llm.errors import LlmAnswerError, LlmBackOffError, LlmError, LlmUnavailableError
from ontoflow.runtime.errors import AnswerBodyError, AnswerTooLargeError
from ontoflow.runtime.http_body import ACCEPT_ENCODING, read_bounded

__all__ = ["LlmAnswer", "LlmClient", "ToolCall"]

log = structlog.get_logger()

_TRANSIENT = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
#: The statuses whose ``Retry-After`` is honoured (RFC 9110 names 503; every API uses it on 429).
_RETRY_AFTER = frozenset({429, 503})


class ToolCall(msgspec.Struct, frozen=True):
    """A function the model asked to call, with its arguments as the JSON text it wrote."""

    name: str
    arguments: str


class LlmAnswer(msgspec.Struct, frozen=True):
    """The first choice of a completion: its text (``""`` when none) and its tool calls."""

    content: str
    tool_calls: list[ToolCall]
    finish_reason: str | None = None


class _Function(msgspec.Struct):
    name: str = ""
    # A JSON text per the API; some servers send the object itself (re-encoded then).
    arguments: str | dict[str, Any] = ""


class _Call(msgspec.Struct):
    function: _Function | None = None


class _Part(msgspec.Struct):
    type: str = "text"
    text: str = ""


class _Message(msgspec.Struct):
    # A text, or (some servers) a list of typed parts whose texts are joined.
    content: str | list[_Part] | None = None
    tool_calls: list[_Call] | None = None


class _Choice(msgspec.Struct):
    message: _Message
    finish_reason: str | None = None


class _Completion(msgspec.Struct):
    choices: list[_Choice]


_completion_decoder = msgspec.json.Decoder(_Completion)


class LlmClient:
    """Talks to the endpoint of ``config``.

    Args:
        config: where and which model.
        transport: an httpx transport (tests may pass one; the default is the network).
        sleep: how a ``Retry-After`` is waited for (tests record it rather than wait).
    """

    def __init__(self, config: LlmConfig, *, transport: httpx.AsyncBaseTransport | None = None,
                 sleep: Callable[[float], Awaitable[None]] = anyio.sleep) -> None:
        self._config = config
        self._transport = transport
        self._sleep = sleep

    def __repr__(self) -> str:
        return f"<LlmClient {shown_url(self._config.base_url)} model={self._config.model}>"

    async def chat(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        tool_choice: Any = None,
        response_format: dict[str, Any] | None = None,
    ) -> LlmAnswer:
        """Ask for one completion of ``messages``.

        Raises:
            LlmUnavailableError: the endpoint is down, slow, rate-limited or failing (transient).
            LlmError: the endpoint refused the request (auth, a bad request, a redirect) (permanent).
            LlmBackOffError: a 429/503 asks for a longer wait than ``max_retry_after_s``.
            LlmAnswerError: the answer is not a chat completion (permanent).
            LlmConfigError: the key file cannot be read.
        """
        config = self._config
        body: dict[str, Any] = {"model": config.model, "messages": list(messages)}
        if tools:
            body["tools"] = list(tools)
        if tool_choice is not None:
            body["tool_choice"] = tool_choice
        if response_format is not None:
            body["response_format"] = response_format
        # identity: an honest server sends the body as it is (a compressed one is inflated bounded).
        headers = {"content-type": "application/json", **ACCEPT_ENCODING}
        key = config.api_key()
        if key:
            headers["authorization"] = f"Bearer {key}"
        url = config.base_url.rstrip("/") + "/chat/completions"
        content = msgspec.json.encode(body)
        waits = 0
        while True:
            status, reply_headers, answer = await self._exchange(url, content, headers)
            log.info("llm_answered", status=status, model=config.model, prompt_messages=len(messages),
                     answer_bytes=len(answer))
            if status not in _TRANSIENT:
                break
            delay = retry_after_s(reply_headers) if status in _RETRY_AFTER else None
            if delay is None:
                raise LlmUnavailableError(f"the model endpoint answered {status}")
            if delay > config.max_retry_after_s:
                raise LlmBackOffError(f"the model endpoint answered {status} and asks to retry after {delay:g} s "
                                      f"(longer than max_retry_after_s, {config.max_retry_after_s:g} s)")
            if waits >= config.retry_after_waits:
                raise LlmUnavailableError(f"the model endpoint answered {status} and asks to retry after {delay:g} s")
            waits += 1
            log.info("llm_retry_after", status=status, wait_s=delay, wait=waits)
            await self._sleep(delay)
        if 300 <= status < 400:
            raise LlmError(f"the model endpoint answered a redirect ({status}), which is not followed (the API key "
                           "would go with it): set the endpoint's URL to the address it redirects to")
        if status in (401, 403):
            raise LlmError(f"the model endpoint refused the API key ({status})")
        if status >= 400:
            raise LlmError(f"the model endpoint refused the request ({status})")
        try:
            completion = _completion_decoder.decode(answer)
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):  # untrusted bytes: every way they fail
            raise LlmAnswerError("the model endpoint's answer is not a chat completion") from None
        if not completion.choices:
            raise LlmAnswerError("the model endpoint's answer has no choice")
        choice = completion.choices[0]
        calls = []
        unnamed = 0
        for call in choice.message.tool_calls or []:
            if call.function is None or not call.function.name:  # a call of nothing: none to act on
                unnamed += 1
                continue
            arguments = call.function.arguments
            calls.append(ToolCall(call.function.name,
                                  arguments if isinstance(arguments, str) else msgspec.json.encode(arguments).decode()))
        if unnamed:  # one line for them all: a line each was 70 MB of log for one answer of 1.3M ``{}``
            log.warning("llm_tool_call_unnamed", count=unnamed)
        content = choice.message.content
        if isinstance(content, list):
            content = "".join(part.text for part in content if part.type == "text")
        return LlmAnswer(content or "", calls, choice.finish_reason)

    async def _exchange(self, url: str, content: bytes, headers: dict[str, str]) -> tuple[int, httpx.Headers, bytes]:
        """One request: its status, headers and body (read only for a 2xx), within one budget.

        Raises:
            LlmUnavailableError: the endpoint is unreachable or the exchange overran ``timeout_s``.
            LlmAnswerError: the body is larger than ``max_answer_bytes``.
        """
        config = self._config
        try:
            with anyio.fail_after(config.timeout_s):
                async with httpx.AsyncClient(transport=self._transport, timeout=config.timeout_s,
                                             follow_redirects=False) as http:
                    async with http.stream("POST", url, content=content, headers=headers) as reply:
                        if not 200 <= reply.status_code < 300:  # the body of a refusal is not read
                            return reply.status_code, reply.headers, b""
                        return reply.status_code, reply.headers, await read_bounded(reply, config.max_answer_bytes)
        except (TimeoutError, httpx.TimeoutException):
            raise LlmUnavailableError(f"the model endpoint did not answer within {config.timeout_s:g} s") from None
        except httpx.TransportError as exc:
            raise LlmUnavailableError(f"the model endpoint is unreachable ({type(exc).__name__})") from None
        except httpx.HTTPError as exc:  # the rest of httpx's (a body it could not decode): never a crash
            raise LlmAnswerError(f"the model endpoint's answer cannot be read ({type(exc).__name__})") from None
        except AnswerBodyError as exc:  # its size or its encoding, never its content
            bound = " (max_answer_bytes)" if isinstance(exc, AnswerTooLargeError) else ""
            raise LlmAnswerError(f"the model endpoint's answer is {exc}{bound}") from None


def retry_after_s(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """How long an endpoint asks to be left alone: ``retry-after-ms`` (OpenAI's), else
    ``Retry-After`` in seconds or as an HTTP date; None when absent or not a sane number.

    Args:
        headers: the reply's headers.
        now: the time as a Unix timestamp (the clock when None), for a date.
    """
    milliseconds = _number(headers.get("retry-after-ms"))
    if milliseconds is not None:
        return milliseconds / 1000
    text = (headers.get("retry-after") or "").strip()
    seconds = _number(text)
    if seconds is not None or not text:
        return seconds
    try:
        when = parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return max(0.0, when - (time.time() if now is None else now))


def _number(text: str | None) -> float | None:
    """A finite, non-negative number of ``text``, or None."""
    if not text or len(text) > 32:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None
