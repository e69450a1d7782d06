"""One turn of the HTTP entry while its client waits: cancelled when the client goes away, and
a streamed answer kept alive until it comes.

A turn may take long (a model, a run), and the client may leave meanwhile (closed the tab,
hit Ctrl-C, timed out): the turn is then cancelled (the ``Answerer`` call is), which withdraws
it behind (its run cancelled, no further model call: ``EdgeService.ask``). Hypercorn tells the
app by the ``http.disconnect`` message ``receive`` hands it once the body was read.

A streamed answer (``stream: true``) sends its headers and first chunk (the role, as OpenAI
does) at once, then an SSE comment line (``: keep-alive``) every ``keepalive_s`` until the
answer: a proxy between (nginx's ``proxy_read_timeout`` is 60 s) sees bytes flow and does not
cut a long run. Clients ignore comment lines (the SSE rule; the openai SDK's decoder too).
Its status is 200 by then, so a turn refused after that (busy, the model endpoint down) is an
``error`` event in OpenAI's shape (``data: {"error": {...}}``), which the openai SDK raises as
``APIError``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from ontoflow.runtime.http._reply import Reply

__all__ = ["ClientGone", "TurnStream", "until_gone"]

#: What an SSE client ignores: a comment line.
KEEP_ALIVE = b": keep-alive\n\n"


class ClientGone(Exception):
    """Raised when the HTTP client closed its connection before the turn's answer."""


async def _disconnected(receive: Receive) -> None:
    """Return once the client is gone (the body was read: nothing else comes before)."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def _watched(receive: Receive, call: Callable[[], Awaitable[Reply]], done: anyio.Event,
                   outcome: list[Reply | Exception], on_gone: Callable[[], Any]) -> bool:
    """Run ``call`` until it answers (into ``outcome``, an exception too) or the client leaves
    (``on_gone()``, then ``call`` is cancelled); ``done`` is set when it answered. Returns
    whether the client left."""
    gone = False
    async with anyio.create_task_group() as tg:

        async def turn() -> None:
            try:
                outcome.append(await call())
            except Exception as exc:  # the caller says what it means (a 500, an error event)
                outcome.append(exc)
            done.set()
            tg.cancel_scope.cancel()

        async def watch() -> None:
            nonlocal gone
            await _disconnected(receive)
            gone = True
            on_gone()  # said before the turn is withdrawn (its run's end is logged after)
            tg.cancel_scope.cancel()

        tg.start_soon(watch)
        tg.start_soon(turn)
    return gone and not outcome


async def until_gone(receive: Receive, call: Callable[[], Awaitable[Reply]], on_gone: Callable[[], Any]) -> Reply:
    """``await call()``, cancelled when the client goes away first (after ``on_gone()``).

    Raises:
        ClientGone: when the client left before the answer (``call`` was cancelled).
        Exception: whatever ``call`` raised.
    """
    outcome: list[Reply | Exception] = []
    if await _watched(receive, call, anyio.Event(), outcome, on_gone):
        raise ClientGone
    if isinstance(outcome[0], Exception):
        raise outcome[0]
    return outcome[0]


class TurnStream(Response):
    """A streamed answer (see the module docstring): ``first`` at once, ``: keep-alive`` every
    ``keepalive_s`` while ``call`` works, then what ``events`` makes of its outcome (a Reply or
    the exception it raised); ``on_gone()`` when the client left first (``call`` cancelled)."""

    media_type = "text/event-stream"

    def __init__(self, call: Callable[[], Awaitable[Reply]], *, first: bytes,
                 events: Callable[[Reply | Exception], list[bytes]], on_gone: Callable[[], Any],
                 keepalive_s: float) -> None:
        self.status_code = 200
        self.background = None
        self.init_headers({"cache-control": "no-cache"})
        self._call, self._first, self._events, self._on_gone = call, first, events, on_gone
        self._keepalive_s = keepalive_s
        #: Called once the stream ended, however it did (the entry's count of its turns).
        self.on_end: Callable[[], Any] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Send the stream (an ASGI app); ``on_end()`` after, however it ended."""
        try:
            await self._stream(receive, send)
        finally:
            if self.on_end is not None:
                self.on_end()

    async def _stream(self, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        await send({"type": "http.response.body", "body": self._first, "more_body": True})
        outcome: list[Reply | Exception] = []
        done = anyio.Event()
        async with anyio.create_task_group() as tg:

            async def answering() -> None:
                await _watched(receive, self._call, done, outcome, self._on_gone)
                tg.cancel_scope.cancel()  # answered, or the client left: no more keep-alives

            tg.start_soon(answering)
            while True:
                with anyio.move_on_after(self._keepalive_s):
                    await done.wait()
                if done.is_set():
                    break
                await send({"type": "http.response.body", "body": KEEP_ALIVE, "more_body": True})
        if not outcome:  # the client left
            return
        for event in self._events(outcome[0]):
            await send({"type": "http.response.body", "body": event, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
