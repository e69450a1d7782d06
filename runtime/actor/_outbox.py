"""An actor's outbox: what one batch of messages caused, sent once, after its commit.

Everything a batch of incoming messages (or a tick, or the local calls of one event-loop turn)
causes is collected here and leaves in one :meth:`Outbox.flush`: first the commit gate commits
(a durable actor's journal), then the messages go out, grouped per peer (``send_many``, and
``send_clients`` for client replies: one ZeroMQ message per peer per flush instead of one per
message). So no peer ever hears of something the journal could lose; a commit that fails
sends nothing of what it held.

While a batch is being handled (:meth:`Outbox.holding`), nothing is flushed but the batch's
end; outside a batch, what is put is flushed once the tasks made ready in this event-loop turn
have run (their sends then share the ZeroMQ messages). Without a gate, a long batch need not
be handled whole before its first messages leave: past ``chunk`` messages they go at once.

A commit that fails (a full disk) makes the outbox *unavailable*: what the batch held stays
held, in order, and nothing of it leaves; the commit is tried again with a capped exponential
backoff (by the next :meth:`Outbox.flush` past the delay: a socket actor's timer flushes every
tick), and once it succeeds everything held leaves, in the order it was put, and
``on_available`` is called. The actor keeps serving meanwhile; what it sends then without
deciding anything (a heartbeat, the answer to a read) goes through :meth:`Outbox.bypass`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, Protocol

import anyio
import structlog

from ontoflow.runtime.batching import SEND_CHUNK
from ontoflow.runtime.errors import ActorDeadError

__all__ = ["CommitGate", "Outbox", "Sink"]

log = structlog.get_logger()


class CommitGate(Protocol):
    """What a durable actor's outbox waits for: the commit of what caused its messages."""

    def commit(self) -> None:
        """Make durable everything recorded since the last commit (nothing when nothing was).

        Raises:
            Exception: when it cannot; the outbox then sends nothing of what it held and calls
                it again later: the gate keeps what it could not commit and commits it first.
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

    def send_clients(self, items: list[tuple[bytes, Any]]) -> None:
        """Send client API replies, per client in order (one ZeroMQ message per client)."""
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


#: The first and the longest delay between two tries of a failed commit, in seconds.
RETRY_FIRST_S, RETRY_MAX_S = 0.05, 2.0


class Outbox:
    """Messages waiting for their batch's commit (see the module docstring).

    Args:
        gate: commits before every flush; ``None`` for an actor that records nothing.
        on_failure: called with the error of a flush scheduled by the outbox itself that
            failed for another reason than its commit (a failed commit only makes the outbox
            unavailable).
        chunk: without a gate, messages after which a batch's sends go out before its end.
        monotonic: the clock of the commit's retry delays, in seconds.

    Attributes:
        available: False from a failed commit until a retry of it succeeds (what it held
            waits). A plain attribute, not a property: the orchestrator reads it for every
            message (read it, never set it).
        on_available: called (no argument) once a failed commit finally succeeded and what it
            held has left.
        failures: commits that failed since the outbox was made.
        sends: flushes that handed messages to the sink since the outbox was made (the actor
            kernel reads it to know that a reply may be on its way: ``BatchActor.spin_us``).
    """

    __slots__ = ("_depth", "_error", "_gate", "_hold", "_held_waiters", "_items", "_monotonic", "_on_failure",
                 "_replies", "_retry_at", "_retry_s", "_scheduled", "_sink", "_waiters", "available", "chunk", "failures",
                 "on_available", "sends")

    def __init__(self, *, gate: CommitGate | None = None, on_failure: Callable[[Exception], None] | None = None,
                 chunk: int = SEND_CHUNK, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._gate = gate
        self._on_failure = on_failure
        self._sink: Sink | None = None
        # Wire messages and client replies apart, each as the sink takes them: a flush hands
        # both lists over as they are, with no pass to split them (they go to two sends).
        self._items: list[tuple[bytes, Any]] = []
        self._replies: list[tuple[bytes, Any]] = []
        self._depth = 0
        self._scheduled = False
        self._waiters: _Waiters | None = None
        self._held_waiters: list[_Waiters] = []
        self._monotonic = monotonic
        self._error: Exception | None = None
        self.available = True  # kept equal to ``_error is None``
        self._retry_at = 0.0
        self._retry_s = RETRY_FIRST_S
        self.chunk = chunk
        self.failures = 0
        self.sends = 0
        self.on_available: Callable[[], None] | None = None
        self._hold = _Hold(self)

    def attach(self, sink: Sink | None) -> None:
        """Send to ``sink`` from now on (``None``: the socket is gone; flushes only commit)."""
        self._sink = sink

    def __len__(self) -> int:
        return len(self._items) + len(self._replies)

    @property
    def error(self) -> Exception | None:
        """The error of the failed commit while unavailable, else None."""
        return self._error

    def holding(self) -> _Hold:
        """Hold every flush but an explicit one while the ``with`` block runs (a batch being
        handled). A plain class, not a generator: it is entered once per batch."""
        return self._hold

    def put(self, identity: bytes, message: Any) -> None:
        """Queue a wire message for ``identity``."""
        items = self._items
        items.append((identity, message))
        if not self._depth:
            self._soon()
        elif self._gate is None and len(items) >= self.chunk:
            # Workers start on the first messages while the rest of the batch is decided
            # (with a gate, each flush is a commit, so the batch's end is waited for).
            self.flush()

    def put_all(self, items: list[tuple[bytes, Any]]) -> None:
        """``put`` each of ``items`` (``(identity, message)``) in order, in one call (a worker
        host's answers of the steps it ran back to back): appended together, with a flush
        exactly where ``put`` would make one (each ``chunk`` reached while held)."""
        if not self._depth:
            for identity, message in items:
                self.put(identity, message)
            return
        while True:
            held = self._items
            room = self.chunk - len(held)
            if self._gate is not None or len(items) < room:
                held.extend(items)
                return
            held.extend(items[:room])
            self.flush()
            items = items[room:]
            if not items:
                return

    def put_client(self, identity: bytes, message: Any) -> None:
        """Queue a client API reply for ``identity``; it leaves after its batch's commit."""
        self._replies.append((identity, message))
        if not self._depth:
            self._soon()

    def bypass(self, identity: bytes, message: Any, *, client: bool = False) -> None:
        """Send at once, ahead of what waits for a commit: only for a message that tells
        nothing recorded (a heartbeat, a refusal, the answer to a read from committed state)."""
        sink = self._sink
        if sink is None:
            return
        if client:
            sink.send_client(identity, message)
        else:
            sink.send_many([(identity, message)])

    def commit(self) -> None:
        """Commit now unless a batch is held (its end commits); the messages follow within
        this event-loop turn. While unavailable, this waits for the retry like any flush.

        Raises:
            Exception: what the gate raised (the outbox is then unavailable).
        """
        if not self._depth:
            if self._gate is not None and self._error is None:
                try:
                    self._gate.commit()
                except Exception as exc:
                    self._failed(exc)
                    raise
            if self._items or self._replies:
                self._soon()

    async def committed(self) -> None:
        """Return once what was recorded so far is committed, sharing one commit with the other
        callers of this event-loop turn. A commit that fails is retried: the callers wait for
        the retry that succeeds (what they recorded is committed then, not lost)."""
        waiters = self._waiters
        if waiters is None:
            waiters = self._waiters = _Waiters()
            self._soon()
        await waiters.done.wait()
        if waiters.error is not None:
            raise waiters.error

    def flush(self) -> None:
        """Commit, then send what waited for the commit.

        A commit that fails sends nothing: what it held stays held and the outbox is
        unavailable; while it is, a flush before the retry delay does nothing, and one past
        it tries the commit again (the delay doubles up to ``RETRY_MAX_S``).
        """
        if self._gate is None and not self._items and not self._replies and self._waiters is None:
            return  # nothing to commit, send or wake (a worker host's batch of Invokes)
        if self._error is not None and self._monotonic() < self._retry_at:
            if self._waiters is not None:
                self._held_waiters.append(self._waiters)
                self._waiters = None
            return
        waiters, self._waiters = self._waiters, None
        if waiters is not None:
            self._held_waiters.append(waiters)
        try:
            if self._gate is not None:
                self._gate.commit()
        except Exception as exc:
            self._failed(exc)
            return
        recovered = self._error is not None
        if recovered:
            log.warning("commit_recovered", failures=self.failures)
            self._error = None
            self.available = True
            self._retry_s = RETRY_FIRST_S
        held, self._held_waiters = self._held_waiters, []
        for one in held:
            one.done.set()
        items, replies = self._items, self._replies
        if items or replies:
            if items:
                self._items = []
            if replies:
                self._replies = []
            sink = self._sink
            if sink is not None:
                self.sends += 1
                if items:
                    sink.send_many(items)
                # A client pipelining requests (hundreds of Submit(wait=True)) gets what one
                # batch decided for it in one message, not one per reply.
                if replies:
                    sink.send_clients(replies)
        if recovered and self.on_available is not None:
            self.on_available()

    def close(self) -> None:
        """The actor stopped: every caller still waiting in :meth:`committed` raises the commit's
        error (no retry will come to wake it; a shielded waiter would hold its task for ever)."""
        waiting = self._held_waiters + ([self._waiters] if self._waiters is not None else [])
        self._held_waiters, self._waiters = [], None
        for waiters in waiting:
            waiters.error = self._error or ActorDeadError("the actor stopped before its commit")
            waiters.done.set()

    def _failed(self, exc: Exception) -> None:
        """A commit failed: hold everything and try again after the next delay."""
        self.failures += 1
        if self._error is None:
            log.error("commit_failed", error=type(exc).__name__, retry_in_s=self._retry_s)
        else:
            if self._retry_s >= RETRY_MAX_S:  # still failing: one line per longest delay, not per try
                log.warning("commit_still_failing", error=type(exc).__name__, failures=self.failures)
            self._retry_s = min(self._retry_s * 2, RETRY_MAX_S)
        self._error = exc
        self.available = False
        self._retry_at = self._monotonic() + self._retry_s

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
        try:
            self.flush()
        except Exception as exc:  # a send that failed (a commit that fails does not raise)
            log.error("flush_failed", error=type(exc).__name__)
            if self._on_failure is not None:
                self._on_failure(exc)
