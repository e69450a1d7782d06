"""An actor's outbox: what one batch of messages caused, sent once, after its commit.

Everything a batch of incoming messages (or a tick, or the local calls of one event-loop turn)
causes is collected here and leaves in one :meth:`Outbox.flush`: first the commit gate commits
(a durable actor's journal), then the messages go out, grouped per peer (``send_many``: one
ZeroMQ message per peer per flush instead of one per message). So no peer ever hears of
something the journal could lose; a commit that fails sends nothing of what it held.

While a batch is being handled (:meth:`Outbox.holding`), nothing is flushed but the batch's
end; outside a batch, what is put is flushed once the tasks made ready in this event-loop turn
have run (their sends then share the ZeroMQ messages). Without a gate, a long batch need not
be handled whole before its first messages leave: past ``chunk`` messages they go at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

import anyio
import structlog

from ontoflow.runtime.batching import SEND_CHUNK

__all__ = ["CommitGate", "Outbox", "Sink"]

log = structlog.get_logger()


class CommitGate(Protocol):
    """What a durable actor's outbox waits for: the commit of what caused its messages."""

    def commit(self) -> None:
        """Make durable everything recorded since the last commit (nothing when nothing was).

        Raises:
            Exception: when it cannot; the outbox then sends nothing of what it held.
        """
        ...


class Sink(Protocol):
    """Where an outbox's messages go (a ``RouterSocket``)."""

    def send_many(self, items: list[tuple[bytes, Any]]) -> None:
        """Send wire messages, per peer in order."""
        ...

    def send_client(self, identity: bytes, message: Any) -> None:
        """Send one client API reply."""
        ...


class _Waiters:
    """The callers of one event-loop turn waiting for the commit they share (group commit)."""

    __slots__ = ("done", "error")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.error: Exception | None = None


class _Hold:
    __slots__ = ("_outbox",)

    def __init__(self, outbox: Outbox) -> None:
        self._outbox = outbox

    def __enter__(self) -> None:
        self._outbox._depth += 1

    def __exit__(self, *exc_info: object) -> None:
        self._outbox._depth -= 1


class Outbox:
    """Messages waiting for their batch's commit (see the module docstring).

    Args:
        gate: commits before every flush; ``None`` for an actor that records nothing.
        on_failure: called with the error of a flush scheduled by the outbox itself (a commit
            that failed outside a batch, with no caller waiting to hear it).
        chunk: without a gate, messages after which a batch's sends go out before its end.
    """

    __slots__ = ("_depth", "_gate", "_hold", "_items", "_on_failure", "_scheduled", "_sink", "_waiters", "chunk")

    def __init__(self, *, gate: CommitGate | None = None, on_failure: Callable[[Exception], None] | None = None,
                 chunk: int = SEND_CHUNK) -> None:
        self._gate = gate
        self._on_failure = on_failure
        self._sink: Sink | None = None
        self._items: list[tuple[bytes, Any, bool]] = []
        self._depth = 0
        self._scheduled = False
        self._waiters: _Waiters | None = None
        self.chunk = chunk
        self._hold = _Hold(self)

    def attach(self, sink: Sink | None) -> None:
        """Send to ``sink`` from now on (``None``: the socket is gone; flushes only commit)."""
        self._sink = sink

    def __len__(self) -> int:
        return len(self._items)

    def holding(self) -> _Hold:
        """Hold every flush but an explicit one while the ``with`` block runs (a batch being
        handled). A plain class, not a generator: it is entered once per batch."""
        return self._hold

    def put(self, identity: bytes, message: Any) -> None:
        """Queue a wire message for ``identity``."""
        items = self._items
        items.append((identity, message, False))
        if not self._depth:
            self._soon()
        elif self._gate is None and len(items) >= self.chunk:
            # Workers start on the first messages while the rest of the batch is decided
            # (with a gate, each flush is a commit, so the batch's end is waited for).
            self.flush()

    def put_client(self, identity: bytes, message: Any) -> None:
        """Queue a client API reply for ``identity``; it leaves after its batch's commit."""
        self._items.append((identity, message, True))
        if not self._depth:
            self._soon()

    def commit(self) -> None:
        """Commit now unless a batch is held (its end commits); the messages follow within
        this event-loop turn.

        Raises:
            Exception: what the gate raised.
        """
        if not self._depth:
            if self._gate is not None:
                self._gate.commit()
            if self._items:
                self._soon()

    async def committed(self) -> None:
        """Return once what was recorded so far is committed, sharing one commit with the other
        callers of this event-loop turn.

        Raises:
            Exception: what the gate raised for that shared commit.
        """
        waiters = self._waiters
        if waiters is None:
            waiters = self._waiters = _Waiters()
            self._soon()
        await waiters.done.wait()
        if waiters.error is not None:
            raise waiters.error

    def flush(self) -> None:
        """Commit, then send what waited for the commit.

        Raises:
            Exception: what the gate raised; nothing held is sent then (it is dropped: the
                actor stops rather than announce what it could not record).
        """
        waiters, self._waiters = self._waiters, None
        try:
            if self._gate is not None:
                self._gate.commit()
        except Exception as exc:
            self._items = []
            if waiters is not None:
                waiters.error = exc
                waiters.done.set()
            raise
        if waiters is not None:
            waiters.done.set()
        if self._items:
            out, self._items = self._items, []
            sink = self._sink
            if sink is None:
                return
            sink.send_many([(identity, message) for identity, message, client in out if not client])
            for identity, message, client in out:
                if client:
                    sink.send_client(identity, message)

    def _soon(self) -> None:
        """Flush once the tasks made ready in this event-loop turn have run; at once when no
        loop runs."""
        if self._scheduled:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        self._scheduled = True
        loop.call_soon(self._scheduled_flush)

    def _scheduled_flush(self) -> None:
        self._scheduled = False
        waited = self._waiters is not None
        try:
            self.flush()
        except Exception as exc:  # nothing of it was sent
            if waited:
                return  # the callers waiting for this commit were told
            log.error("flush_failed", error=type(exc).__name__)
            if self._on_failure is not None:
                self._on_failure(exc)
