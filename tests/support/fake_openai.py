"""A local HTTP server speaking the OpenAI chat-completions API with scripted answers.

It stands in for a remote model this machine cannot reach; what the tests test is the code
that talks to it. Each request takes the next scripted answer (the last one repeats) and is
recorded, so a test can read what was asked (the prompt, the tools offered).
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import msgspec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

__all__ = ["FakeModel", "answer", "open_fake_openai", "tool_answer"]


def answer(content: str | None = None, tool_calls: list[tuple[str, str]] | None = None, status: int = 200,
           raw: bytes | None = None, headers: dict[str, str] | None = None,
           stream: Callable[[], AsyncIterator[bytes]] | None = None) -> dict[str, Any]:
    """One scripted reply: a completion with ``content`` and/or tool calls, or a bare status,
    or ``raw`` bytes as the body, or the body ``stream()`` yields (sent as it comes: an
    answer that never ends, a huge one); ``headers`` are added to the reply."""
    return {"content": content, "tool_calls": tool_calls or [], "status": status, "raw": raw,
            "headers": headers or {}, "stream": stream}


def tool_answer(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A completion that calls the tool ``name`` with ``arguments``."""
    return answer(tool_calls=[(name, msgspec.json.encode(arguments).decode())])


class FakeModel:
    """The script and the record of one fake endpoint."""

    def __init__(self, script: list[dict[str, Any]]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.url = ""

    def _next(self) -> dict[str, Any]:
        return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    async def completions(self, request: Request) -> Response:
        self.requests.append(msgspec.json.decode(await request.body()))
        self.headers.append(dict(request.headers))
        reply = self._next()
        extra = reply.get("headers") or {}
        if reply.get("stream") is not None:
            return StreamingResponse(reply["stream"](), status_code=reply["status"], headers=extra,
                                     media_type="application/json")
        if reply["raw"] is not None:
            return Response(reply["raw"], status_code=reply["status"], headers=extra, media_type="application/json")
        if reply["status"] != 200:
            return Response(b'{"error": {"message": "scripted failure", "type": "server_error"}}',
                            status_code=reply["status"], headers=extra, media_type="application/json")
        message: dict[str, Any] = {"role": "assistant", "content": reply["content"]}
        if reply["tool_calls"]:
            message["tool_calls"] = [{"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": args}}
                                     for n, (name, args) in enumerate(reply["tool_calls"])]
        body = {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": "fake",
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if reply["tool_calls"] else "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
        return Response(msgspec.json.encode(body), media_type="application/json")


@asynccontextmanager
async def open_fake_openai(script: list[dict[str, Any]]) -> AsyncIterator[FakeModel]:
    """Serve a :class:`FakeModel` on a free loopback port; ``model.url`` is its ``/v1`` root."""
    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    model = FakeModel(script)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    sock.setblocking(False)
    model.url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    config = Config()
    config.bind = [f"fd://{sock.detach()}"]
    config.accesslog = None
    config.errorlog = None
    config.graceful_timeout = 1.0
    app = Starlette(routes=[Route("/v1/chat/completions", model.completions, methods=["POST"])])
    stopped = anyio.Event()

    async def run() -> None:
        with anyio.CancelScope(shield=True):
            await serve(app, config, shutdown_trigger=stopped.wait)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        try:
            yield model
        finally:
            stopped.set()
