"""What every socket-mailbox actor shares, whatever its socket: batches, typed dispatch, Ticks.

One pass (:meth:`BatchActor.pump`) reads every message already queued on the actor's mailbox
(``recv_batch``), hands each to :meth:`BatchActor.receive` (a subclass dispatches with
``match`` on the Struct type), then flushes the :class:`~runtime.actor.Outbox` once: the commit
gate first (a durable actor's journal), then the messages. Time enters as a message too: every
``tick_ms`` a :class:`Tick` carrying "now" goes through ``receive`` like any other, so an
actor's decisions about time are decisions about facts.

The mailbox is anything with ``recv_batch`` (:class:`~runtime.actor.Mailbox`): a bound ROUTER
(:class:`~runtime.actor.SocketActor`, the orchestrator), a connected DEALER
(:class:`~runtime.transport.DealerMailbox`, a worker host, one per session), or the in-memory
:class:`~runtime.actor.MemoryMailbox` of unit tests. Who calls ``pump`` is the subclass's
choice: a socket actor's own receive loop, or a worker host's step runners taking turns.

Spin, then park (``spin_us``): once the actor has sent something (its outbox flushed since the
mailbox was last read), a reply is likely on its way; before waiting for the socket through
the event loop (the thread sleeps in ``epoll_wait`` and must be woken by the kernel, then the
loop runs the socket's callback and resumes the task), ``pump`` polls the mailbox without
blocking (``recv_batch_nowait``) for at most ``spin_us`` microseconds. A message that arrives
meanwhile is taken at once. The window is bounded, and the event loop runs once before each
window (timers fire, other tasks get their turn), so nothing starves; an actor that sent
nothing since its last read parks at once, so an idle actor spins at most one window per
message it gets after a send of its own (a worker host between heartbeats: one a second).
What it costs: up to ``spin_us`` of CPU after each flush whose reply is slower than that.
``spin_us=0`` parks at once. An actor whose last batch held more than :data:`SPIN_BATCH_MAX`
messages parks at once too: its peer is pipelining (many requests in flight), so its next batch
comes once it has handled this one's answers, later than a window, and a window spent polling
takes a core from the very processes that would send it (through the daemon, with 256 runs in
flight, each worker's batches held 34 to 47 Invokes on average, and a third to a half of the
windows after them ended empty).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import anyio
import msgspec
import structlog

from ontoflow.runtime.actor._mailbox import Mailbox
from ontoflow.runtime.actor._outbox import CommitGate, Outbox
from ontoflow.runtime.loop import yield_now

__all__ = ["BatchActor", "DEFAULT_SPIN_US", "SPIN_BATCH_MAX", "Tick", "wall_clock_ms", "where"]

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

#: How long an actor polls its mailbox after sending before it parks (``BatchActor.spin_us``).
DEFAULT_SPIN_US = 0

#: The most messages a batch may have held for the actor to spin after it (see the module docstring).
SPIN_BATCH_MAX = 8

_monotonic_ns = time.monotonic_ns


def _always() -> bool:
    return True


class BatchActor:
    """Base of an actor whose mailbox is read in batches (see the module docstring).

    Subclasses override :meth:`receive` and, when they need them, :meth:`on_start` and
    :meth:`on_stop`; they send with :meth:`send`, and run :meth:`pump` (or
    :meth:`serve_mailbox`) and :meth:`run_timer` in their ``run``.

    Args:
        tick_ms: how often a :class:`Tick` is delivered (``run_timer``).
        clock: returns "now" in milliseconds; the only clock the actor reads.
        gate: the commit gate the outbox waits for (``None``: nothing to commit).
        spin_us: after a flush that sent something, how long ``pump`` polls the mailbox
            before it parks (see the module docstring); 0: park at once. Never after a batch of
            more than :data:`SPIN_BATCH_MAX` messages.

    Attributes:
        outbox: what the current batch caused, flushed at its end.
        spin_hits: batches taken while spinning (without a wake-up by the event loop).
        spin_misses: spin windows that ended with nothing (the actor then parked).
        may_spin: asked before each spin window; a subclass sets a function that says no while
            other work of its process would wait the window out (the event loop does not run
            during it). By default always yes.
        log_info, log_debug: whether those levels are on, read once per batch (a filtered
            log line still costs microseconds; the hot path asks these flags instead).
    """

    def __init__(
        self,
        *,
        tick_ms: int = 50,
        clock: Callable[[], int] = wall_clock_ms,
        gate: CommitGate | None = None,
        spin_us: int = DEFAULT_SPIN_US,
    ) -> None:
        if tick_ms < 1:
            raise ValueError("tick_ms must be >= 1")
        self._tick_s = tick_ms / 1000
        self.spin_us = spin_us
        self.spin_hits = 0
        self.spin_misses = 0
        self.may_spin: Callable[[], bool] = _always
        self._sends_seen = 0  # ``outbox.sends`` when the mailbox was last read
        self._last_batch = 0  # how many messages the last batch ``pump`` read held
        self._clock = clock
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

    @property
    def tick_ms(self) -> int:
        """How often a :class:`Tick` is delivered; a new value applies from the next Tick."""
        return round(self._tick_s * 1000)

    @tick_ms.setter
    def tick_ms(self, value: int) -> None:
        if value < 1:
            raise ValueError("tick_ms must be >= 1")
        self._tick_s = value / 1000

    @property
    def spin_us(self) -> int:
        """How long ``pump`` polls the mailbox after a flush that sent something (0: never)."""
        return self._spin_ns // 1000

    @spin_us.setter
    def spin_us(self, value: int) -> None:
        if value < 0:
            raise ValueError("spin_us must be >= 0")
        self._spin_ns = value * 1000

    def now(self) -> int:
        """The actor's clock, in milliseconds."""
        return self._clock()

    def send(self, identity: bytes, message: Any) -> None:
        """Send a wire message to ``identity`` once the current batch is committed."""
        self.outbox.put(identity, message)

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
        self._handle(messages, self._clock() if now is None else now)
        self.outbox.flush()

    def tick(self, now: int | None = None) -> None:
        """Deliver a :class:`Tick` now (the timer does it every ``tick_ms``), then flush."""
        now = self._clock() if now is None else now
        self.deliver([(_TIMER, Tick(now))], now=now)

    async def pump(self, mailbox: Mailbox) -> None:
        """Wait for the next batch of ``mailbox``, handle it, then flush the outbox once.

        Raises:
            anyio.ClosedResourceError: when the mailbox is closed (or closes meanwhile).
        """
        batch = None
        outbox = self.outbox
        if self._spin_ns and outbox.sends != self._sends_seen and self._last_batch <= SPIN_BATCH_MAX \
                and self.may_spin():
            # A reply may be on its way: let the loop run once, then poll for it a while
            # (no await between the poll and the handling: a cancellation loses nothing).
            await yield_now()
            batch = self._spin(mailbox)
        if not batch:
            batch = await mailbox.recv_batch()
        self._sends_seen = outbox.sends
        self._last_batch = len(batch)
        self._handle(batch, self._clock())
        self._flush_or_fail()  # one commit for the whole batch, then its sends, one per peer

    def _spin(self, mailbox: Mailbox) -> list[tuple[bytes, Any]]:
        """Poll ``mailbox`` until a batch arrives or ``spin_us`` has passed (then ``[]``)."""
        poll = mailbox.recv_batch_nowait
        end = _monotonic_ns() + self._spin_ns
        while True:
            batch = poll()
            if batch:
                self.spin_hits += 1
                return batch
            if _monotonic_ns() >= end:
                self.spin_misses += 1
                return batch

    async def serve_mailbox(self, mailbox: Mailbox) -> None:
        """``pump`` forever (until cancelled, or the mailbox closes)."""
        while True:
            await self.pump(mailbox)

    async def run_timer(self) -> None:
        """Deliver a :class:`Tick` every ``tick_ms`` and flush after each, forever."""
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

    def _handle(self, batch: list[tuple[bytes, Any]], now: int) -> None:
        """Hand every message of ``batch`` to ``receive``, holding the outbox meanwhile."""
        self.refresh_log_levels()
        with self.outbox.holding():
            self.receive_batch(batch, now)

    def receive_batch(self, batch: list[tuple[bytes, Any]], now: int) -> None:
        """``receive`` each message of ``batch`` in order; an exception is logged as
        ``message_handling_failed`` and the next message goes on (a subclass may take some
        messages itself, per batch, as long as it keeps that)."""
        receive = self.receive
        for identity, message in batch:
            try:
                receive(identity, message, now)
            except Exception as exc:  # one bad message must not stop every other run
                log.error("message_handling_failed", peer=identity.hex(), op=type(message).__name__,
                          error=type(exc).__name__, where=where(exc))

    def _flush_or_fail(self) -> None:
        try:
            self.outbox.flush()  # a failed commit does not raise: the outbox holds and retries
        except Exception as exc:  # a send that failed: stop serving
            log.error("flush_failed", error=type(exc).__name__, where=where(exc))
            self.fail(exc)
