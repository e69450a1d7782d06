"""A chat-completions client for any OpenAI-compatible endpoint, over httpx.

One call, one answer: ``await client.chat(messages, tools=..., tool_choice=...)`` returns the
first choice's text and tool calls. What can go wrong becomes a typed error the capability
base classifies (``errors``): 429 and 5xx, a refused or timed-out connection are transient (the
base retries them with backoff and jitter); 4xx and an answer that is not a chat completion are
permanent. The key goes only into the ``Authorization`` header: no log line, error or repr
shows it, nor any prompt or answer text (log lines carry sizes and counts).

An answer is read up to :data:`~ontoflow.runtime.documents.MAX_DOCUMENT_BYTES` (a bigger one,
announced or streamed, is an ``LlmAnswerError`` and its rest is not read: an endpoint that
answers without end does not fill the daemon's memory), and the whole exchange within the
config's ``timeout_s`` (httpx's timeout bounds each read only: a trickle held the caller for
ever).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import httpx
import msgspec
import structlog

from ontoflow.actors.llm._config import LlmConfig
from ontoflow.actors.llm.errors import LlmAnswerError, LlmError, LlmUnavailableError
from ontoflow.runtime.documents import MAX_DOCUMENT_BYTES

__all__ = ["LlmAnswer", "LlmClient", "ToolCall"]

log = structlog.get_logger()

_TRANSIENT = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


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
    arguments: str = ""


class _Call(msgspec.Struct):
    function: _Function = msgspec.field(default_factory=_Function)


class _Message(msgspec.Struct):
    content: str | None = None
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
    """

    def __init__(self, config: LlmConfig, *, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._config = config
        self._transport = transport

    def __repr__(self) -> str:
        return f"<LlmClient {self._config.base_url} model={self._config.model}>"

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
            LlmError: the endpoint refused the request (auth, a bad request) (permanent).
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
        headers = {"content-type": "application/json"}
        key = config.api_key()
        if key:
            headers["authorization"] = f"Bearer {key}"
        url = config.base_url.rstrip("/") + "/chat/completions"
        try:
            async with httpx.AsyncClient(transport=self._transport, timeout=config.timeout_s) as http:
                status, content = await _exchange(http, http.build_request(
                    "POST", url, content=msgspec.json.encode(body), headers=headers), config.timeout_s)
        except httpx.TimeoutException:
            raise LlmUnavailableError(f"the model endpoint did not answer within {config.timeout_s:g} s") from None
        except httpx.TransportError as exc:
            raise LlmUnavailableError(f"the model endpoint is unreachable ({type(exc).__name__})") from None
        log.info("llm_answered", status=status, model=config.model, prompt_messages=len(messages),
                 answer_bytes=len(content))
        if status in _TRANSIENT:
            raise LlmUnavailableError(f"the model endpoint answered {status}")
        if status in (401, 403):
            raise LlmError(f"the model endpoint refused the API key ({status})")
        if status >= 400:
            raise LlmError(f"the model endpoint refused the request ({status})")
        try:
            completion = _completion_decoder.decode(content)
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):  # untrusted bytes: every way they fail
            raise LlmAnswerError("the model endpoint's answer is not a chat completion") from None
        if not completion.choices:
            raise LlmAnswerError("the model endpoint's answer has no choice")
        choice = completion.choices[0]
        calls = [ToolCall(c.function.name, c.function.arguments) for c in choice.message.tool_calls or []]
        return LlmAnswer(choice.message.content or "", calls, choice.finish_reason)


async def _exchange(http: httpx.AsyncClient, request: httpx.Request, budget_s: float) -> tuple[int, bytes]:
    """Send ``request``; its status and body, the body at most ``MAX_DOCUMENT_BYTES``, all within ``budget_s``.

    Raises:
        httpx.TimeoutException: when the whole answer took longer than ``budget_s``.
        httpx.TransportError: when the endpoint cannot be reached (or stops mid-answer).
        LlmAnswerError: when the body is longer than the bound.
    """
    with anyio.move_on_after(budget_s):
        reply = await http.send(request, stream=True)
        try:
            announced = reply.headers.get("content-length", "")
            if announced.isdigit() and int(announced) > MAX_DOCUMENT_BYTES:
                raise LlmAnswerError(f"the model endpoint's answer is larger than {MAX_DOCUMENT_BYTES} bytes")
            body = bytearray()
            async for chunk in reply.aiter_bytes():
                body += chunk
                if len(body) > MAX_DOCUMENT_BYTES:
                    raise LlmAnswerError(f"the model endpoint's answer is larger than {MAX_DOCUMENT_BYTES} bytes")
        finally:
            await reply.aclose()
        return reply.status_code, bytes(body)
    raise httpx.TimeoutException(f"no whole answer within {budget_s:g} s", request=request)
