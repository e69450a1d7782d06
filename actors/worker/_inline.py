"""Running a coroutine's first slice in the calling task, and awaiting the rest only if needed.

A worker's step runner sends the coroutine its first ``None`` itself (``start`` does just that;
the runner does it inline, it is the hot path): when the coroutine finishes without ever
waiting (a no-op, a lookup, a pure transform), its result is there at once and nothing was
scheduled; when it waits, the runner knows it before awaiting the rest (``resume``) and can
hand the socket to another runner meanwhile. Both halves run in the calling task, so
``asyncio.current_task()``, anyio cancel scopes entered in the first slice and
``Task.cancel()`` all see the task that finishes the coroutine: this is what ``await coro``
does, split at its first suspension.
"""

from __future__ import annotations

import types
from collections.abc import Coroutine, Generator
from typing import Any, TypeVar

__all__ = ["Started", "not_closed", "resume", "start"]

T = TypeVar("T")


class Started:
    """A coroutine whose first slice ran: either ``done`` with ``result``, or waiting on
    ``pending`` (what it yielded to the event loop)."""

    __slots__ = ("coro", "done", "pending", "result")

    def __init__(self, coro: Coroutine[Any, Any, Any], done: bool, result: Any, pending: Any) -> None:
        self.coro = coro
        self.done = done
        self.result = result
        self.pending = pending


def start(coro: Coroutine[Any, Any, T]) -> Started:
    """Run ``coro`` up to its first suspension, in the calling task.

    Returns:
        A ``Started``: ``done`` and ``result`` when it returned without waiting; otherwise
        ``await resume(started.coro, started.pending)`` (in the same task) finishes it.

    Raises:
        BaseException: whatever the coroutine raised in its first slice (a ``GeneratorExit``
            as ``not_closed``'s ``RuntimeError``).
    """
    try:
        pending = coro.send(None)
    except StopIteration as stop:
        return Started(coro, True, stop.value, None)
    except GeneratorExit as raised:  # a running coroutine is not being closed: it raised one
        raise not_closed(raised) from raised
    return Started(coro, False, None, pending)


@types.coroutine
def resume(coro: Coroutine[Any, Any, T], pending: Any) -> Generator[Any, Any, T]:
    """Await the rest of ``coro``, whose first slice ran and yielded ``pending`` (``start``
    returns both as ``Started.coro`` and ``Started.pending``); returns its result.

    What the task sends or throws in (a wake-up, a cancellation) is passed on to the
    coroutine, exactly as a plain ``await`` would; a ``GeneratorExit`` the coroutine raises
    without being closed comes out as ``not_closed``'s ``RuntimeError``.
    """
    while True:
        try:
            sent = yield pending
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # a cancellation (or any throw): the coroutine decides
            try:
                pending = coro.throw(exc)
            except StopIteration as stop:
                return stop.value
            except GeneratorExit as raised:
                raise not_closed(raised) from raised
        else:
            try:
                pending = coro.send(sent)
            except StopIteration as stop:
                return stop.value
            except GeneratorExit as raised:
                raise not_closed(raised) from raised


def not_closed(exc: GeneratorExit) -> RuntimeError:
    """The error for a ``GeneratorExit`` a coroutine raised on its own (not thrown in by its
    ``close()``), as PEP 479 turns a raised ``StopIteration`` into one: let through, it read
    as the caller's own coroutine being closed.

    Args:
        exc: what the coroutine raised.

    Returns:
        A ``RuntimeError`` to raise from ``exc``.
    """
    return RuntimeError("the coroutine raised GeneratorExit without being closed")
