"""An actor whose mailbox is a ZeroMQ ROUTER socket, drained in batches.

The same code serves ``inproc://``, ``ipc://`` and ``tcp://`` (``runtime.transport``). One
pass of the loop reads every message already queued (``recv_batch``), hands each to
:meth:`SocketActor.receive` (a subclass dispatches with ``match`` on the Struct type), then
flushes the :class:`~runtime.actor.Outbox` once: the commit gate first (a durable actor's
journal), then the messages. A commit that fails does not stop the actor: the outbox holds
what it caused and retries it on the following flushes (the timer's, at least once a tick). Time enters as a message too: every ``tick_ms`` a
:class:`Tick` carrying "now" goes through ``receive`` like any other, so an actor's decisions
about time are decisions about facts.

Local calls (a submit from code on the same event loop) run between two socket reads, so the
actor's state needs no lock; what they put in the outbox leaves at the end of the event-loop
turn (``Outbox.put``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import anyio
import msgspec
import structlog
from anyio.abc import TaskStatus

from ontoflow.runtime.actor._outbox import CommitGate, Outbox
from ontoflow.runtime.transport import DEFAULT_MAX_MESSAGE_BYTES, RouterSocket, open_router

__all__ = ["SocketActor", "Tick", "wall_clock_ms", "where"]

log = structlog.get_logger()


def wall_clock_ms() -> int:
    """Milliseconds since the epoch: the time base of facts (journals outlive a process)."""
    return time.time_ns() // 1_000_000


def where(exc: BaseException) -> str:
    """``file:line`` of the innermost frame of ``exc`` (a location, never a value)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}" if tb is not None else "?"


class Tick(msgspec.Struct, frozen=True):
    """The clock, as a message: delivered to ``receive`` every ``tick_ms`` with "now"."""

    now_ms: int


#: The identity a Tick arrives from (no peer: the actor's own timer).
_TIMER = b""


class SocketActor:
    """Base of an actor served by a bound ROUTER (see the module docstring).

    Subclasses override :meth:`receive` and, when they need them, :meth:`on_start` and
    :meth:`on_stop`; they send with :meth:`send` / :meth:`send_client`.

    Args:
        address: where to bind the ROUTER.
        context: the zmq context (``inproc://`` needs the peers' one).
        tick_ms: how often a :class:`Tick` is delivered.
        clock: returns "now" in milliseconds; the only clock the actor reads.
        gate: the commit gate the outbox waits for (``None``: nothing to commit).
        curve, insecure, max_message_bytes: as ``runtime.transport.open_router``.

    Attributes:
        address: the bound address once started (the real port of ``tcp://...:0``).
        outbox: what the current batch caused, flushed at its end.
        log_info, log_debug: whether those levels are on, read once per batch (a filtered
            log line still costs microseconds; the hot path asks these flags instead).
    """

    def __init__(
        self,
        *,
        address: str,
        context: Any = None,
        tick_ms: int = 50,
        clock: Callable[[], int] = wall_clock_ms,
        gate: CommitGate | None = None,
        curve: Any = None,
        insecure: bool = False,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        if tick_ms < 1:
            raise ValueError("tick_ms must be >= 1")
        self.address = address
        self._bind = address
        self._context = context
        self._tick_s = tick_ms / 1000
        self._clock = clock
        self._curve = curve
        self._insecure = insecure
        self._max_message_bytes = max_message_bytes
        self._scope: anyio.CancelScope | None = None
        self._failure: Exception | None = None
        self.outbox = Outbox(gate=gate, on_failure=self.fail)
        self.log_info = True
        self.log_debug = False
        self.refresh_log_levels()

    # -- what a subclass writes ------------------------------------------------------------

    def receive(self, identity: bytes, message: Any, now: int) -> None:
        """Handle one message (a wire message from the peer ``identity``, or a :class:`Tick`
        from the actor's own timer, identity ``b""``). An exception is logged as ``message_handling_failed`` and the
        actor goes on with the next message."""

    def on_start(self, now: int) -> None:
        """Run once the socket is bound, before the first message (what it sends leaves with
        the first flush). If it raises, the actor does not start."""

    def on_stop(self) -> None:
        """Run once when the loop ends, before the last flush."""

    # -- the kernel --------------------------------------------------------------------------

    def now(self) -> int:
        """The actor's clock, in milliseconds."""
        return self._clock()

    def send(self, identity: bytes, message: Any) -> None:
        """Send a wire message to ``identity`` once the current batch is committed."""
        self.outbox.put(identity, message)

    def send_client(self, identity: bytes, message: Any) -> None:
        """Send a client API reply (``protocols.client``) once the current batch is committed."""
        self.outbox.put_client(identity, message)

    def refresh_log_levels(self) -> None:
        """Read whether INFO and DEBUG are on (once per batch: see ``log_info``)."""
        bound = log.bind()  # one bind of the lazy proxy for both questions
        self.log_info = bound.is_enabled_for(logging.INFO)
        self.log_debug = bound.is_enabled_for(logging.DEBUG)

    def fail(self, exc: Exception) -> None:
        """Stop serving because of ``exc``; ``run`` raises it once stopped."""
        self._failure = exc
        self.stop()

    def stop(self) -> None:
        """Stop serving; ``run`` returns."""
        if self._scope is not None:
            self._scope.cancel()

    def deliver(self, messages: list[tuple[bytes, Any]], *, now: int | None = None) -> None:
        """Handle ``messages`` as one batch, then flush (what the loop does with each read)."""
        if now is None:
            now = self._clock()
        self.refresh_log_levels()
        with self.outbox.holding():
            for peer, message in messages:
                try:
                    self.receive(peer, message, now)
                except Exception as exc:  # one bad message must not stop every other run
                    log.error("message_handling_failed", peer=peer.hex(), op=type(message).__name__,
                              error=type(exc).__name__, where=where(exc))
        self.outbox.flush()

    def tick(self, now: int | None = None) -> None:
        """Deliver a :class:`Tick` now (the timer does it every ``tick_ms``), then flush."""
        now = self._clock() if now is None else now
        self.deliver([(_TIMER, Tick(now))], now=now)

    async def run(self, *, task_status: TaskStatus[Any] = anyio.TASK_STATUS_IGNORED) -> None:
        """Bind the ROUTER, run ``on_start``, and serve until stopped or cancelled.

        Raises:
            runtime.errors.TransportError: when the address cannot be bound.
            Exception: what ``on_start`` raised, or the error a flush failed with.
        """
        async with open_router(self._bind, context=self._context, curve=self._curve, insecure=self._insecure,
                               max_message_bytes=self._max_message_bytes) as router:
            self.address = router.address
            self.outbox.attach(router)
            try:
                with self.outbox.holding():
                    self.on_start(self._clock())
                self.outbox.flush()
                if self.outbox.error is not None:  # the actor does not start on a journal it cannot write
                    raise self.outbox.error
                with anyio.CancelScope() as scope:
                    self._scope = scope
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(self._receive_loop, router)
                        tg.start_soon(self._timer)
                        task_status.started(self)
            finally:
                self._scope = None
                self.on_stop()
                if self._failure is None:
                    self.outbox.flush()  # what the last batch decided is recorded (and sent) before we go
                    if self.outbox.error is not None:  # nothing of it was sent, so nothing announced is lost
                        log.error("stopped_with_uncommitted_batch", error=type(self.outbox.error).__name__)
                self.outbox.attach(None)
        if self._failure is not None:
            raise self._failure

    async def _receive_loop(self, router: RouterSocket) -> None:
        outbox = self.outbox
        receive = self.receive
        while True:
            batch = await router.recv_batch()
            now = self._clock()
            self.refresh_log_levels()
            with outbox.holding():
                for identity, message in batch:
                    try:
                        receive(identity, message, now)
                    except Exception as exc:  # one bad message must not stop every other run
                        log.error("message_handling_failed", peer=identity.hex(), op=type(message).__name__,
                                  error=type(exc).__name__, where=where(exc))
            self._flush_or_fail()  # one commit for the whole batch, then its sends, one per peer

    async def _timer(self) -> None:
        while True:
            await anyio.sleep(self._tick_s)
            now = self._clock()
            self.refresh_log_levels()
            with self.outbox.holding():
                try:
                    self.receive(_TIMER, Tick(now), now)
                except Exception as exc:
                    log.error("message_handling_failed", peer="", op="Tick", error=type(exc).__name__, where=where(exc))
            self._flush_or_fail()

    def _flush_or_fail(self) -> None:
        try:
            self.outbox.flush()  # a failed commit does not raise: the outbox holds and retries
        except Exception as exc:  # a send that failed: stop serving
            log.error("flush_failed", error=type(exc).__name__, where=where(exc))
            self.fail(exc)
