"""An actor whose mailbox is a ZeroMQ ROUTER socket, drained in batches.

The same code serves ``inproc://``, ``ipc://`` and ``tcp://`` (``runtime.transport``). The
batch loop is :class:`~runtime.actor.BatchActor`'s, shared with every other actor: one
pass of it reads every message already queued (``recv_batch``), hands each to
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

from collections.abc import Callable
from typing import Any

import anyio
import structlog
from anyio.abc import TaskStatus

from ontoflow.runtime.actor._batch_actor import DEFAULT_SPIN_US, BatchActor, Tick, wall_clock_ms, where
from ontoflow.runtime.actor._outbox import CommitGate
from ontoflow.runtime.transport import DEFAULT_MAX_MESSAGE_BYTES, open_router

__all__ = ["SocketActor", "Tick", "wall_clock_ms", "where"]

log = structlog.get_logger()


class SocketActor(BatchActor):
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
        spin_us: how long to poll the ROUTER after a flush that sent something before parking
            (``BatchActor``; 0 by default: see ``DEFAULT_SPIN_US``).

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
        spin_us: int = DEFAULT_SPIN_US,
    ) -> None:
        super().__init__(tick_ms=tick_ms, clock=clock, gate=gate, spin_us=spin_us)
        self.address = address
        self._bind = address
        self._context = context
        self._curve = curve
        self._insecure = insecure
        self._max_message_bytes = max_message_bytes

    # -- the kernel (the rest is ``BatchActor``'s) ------------------------------------------

    def undelivered(self, identity: bytes, messages: list[Any]) -> None:
        """Wire messages the ROUTER refused for ``identity`` (no connection now, or its queue
        full): they never reached it. A subclass may act on that; the default does nothing."""

    def send_client(self, identity: bytes, message: Any) -> None:
        """Send a client API reply (``protocols.client``) once the current batch is committed."""
        self.outbox.put_client(identity, message)

    async def run(self, *, task_status: TaskStatus[Any] = anyio.TASK_STATUS_IGNORED) -> None:
        """Bind the ROUTER, run ``on_start``, and serve until stopped or cancelled.

        Raises:
            runtime.errors.TransportError: when the address cannot be bound.
            Exception: what ``on_start`` raised, or the error a flush failed with.
        """
        async with open_router(self._bind, context=self._context, curve=self._curve, insecure=self._insecure,
                               max_message_bytes=self._max_message_bytes) as router:
            self.address = router.address
            router.on_undelivered = self.undelivered
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
                        tg.start_soon(self.serve_mailbox, router)
                        tg.start_soon(self.run_timer)
                        task_status.started(self)
            finally:
                self._scope = None
                self.on_stop()
                if self._failure is None:
                    self.outbox.flush()  # what the last batch decided is recorded (and sent) before we go
                    if self.outbox.error is not None:  # nothing of it was sent, so nothing announced is lost
                        log.error("stopped_with_uncommitted_batch", error=type(self.outbox.error).__name__)
                self.outbox.close()  # who still waits for a commit learns it will not come
                self.outbox.attach(None)
        if self._failure is not None:
            raise self._failure
