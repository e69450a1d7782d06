"""An actor's mailbox: where its batches come from and where its outbox sends.

A :class:`Mailbox` hands out batches of ``(peer identity, message)`` pairs; the same object is
the :class:`~runtime.actor.Sink` the actor's outbox sends to. A bound ROUTER
(``runtime.transport.RouterSocket``) is one as it is, and so is a connected DEALER wrapped in a
``runtime.transport.DealerMailbox`` (a single peer: the identity is ``b""`` both ways), both
with their sockets; :class:`MemoryMailbox` is one without a socket, for unit tests of an
actor's logic (a real implementation of the interface: batches queue up and are read whole,
sends are kept in order).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import anyio
import anyio.lowlevel

__all__ = ["Mailbox", "MemoryMailbox"]


class Mailbox(Protocol):
    """Where an actor's messages come from, a batch at a time."""

    async def recv_batch(self) -> list[tuple[bytes, Any]]:
        """Wait for at least one message, then return every one already queued.

        Raises:
            anyio.ClosedResourceError: when the mailbox is closed.
        """
        ...

    def recv_batch_nowait(self) -> list[tuple[bytes, Any]]:
        """Every message already queued, without waiting or yielding; ``[]`` when none is
        (what a spinning actor polls: ``BatchActor.spin_us``).

        Raises:
            anyio.ClosedResourceError: when the mailbox is closed.
        """
        ...


class MemoryMailbox:
    """A mailbox in memory: what :meth:`put` queues, ``recv_batch`` hands out; what the
    actor's outbox sends is kept in :attr:`sent`, in order.

    Attributes:
        sent: ``(identity, message)`` of every message sent, oldest first.
        flushes: how many times the outbox sent (``send_many`` calls): one per flush.
        polls: ``recv_batch_nowait`` calls (a spinning actor's polls).
        waits: ``recv_batch`` calls that found nothing queued and waited.
        on_poll: called before each ``recv_batch_nowait`` (a test puts a message from it, as
            a peer whose reply arrives while the actor spins).
    """

    def __init__(self) -> None:
        self._queued: list[tuple[bytes, Any]] = []
        self._arrived = anyio.Event()
        self._sent_changed = anyio.Event()
        self._closed = False
        self.sent: list[tuple[bytes, Any]] = []
        self.flushes = 0
        self.polls = 0
        self.waits = 0
        self.on_poll: Callable[[], None] | None = None

    def put(self, message: Any, identity: bytes = b"") -> None:
        """Queue ``message`` from the peer ``identity`` for the next batch."""
        self._queued.append((identity, message))
        self._arrived.set()

    def close(self) -> None:
        """Close the mailbox: a waiting and every later ``recv_batch`` raise ``ClosedResourceError``."""
        self._closed = True
        self._arrived.set()

    async def recv_batch(self) -> list[tuple[bytes, Any]]:
        """Every message queued, once there is at least one (see ``Mailbox.recv_batch``)."""
        if self._queued:  # like a socket's: a busy mailbox starves nobody (an empty one yields in wait)
            await anyio.lowlevel.checkpoint()
        while True:
            if self._closed:
                raise anyio.ClosedResourceError
            if self._queued:
                batch, self._queued = self._queued, []
                return batch
            self.waits += 1
            await self._arrived.wait()
            self._arrived = anyio.Event()

    def recv_batch_nowait(self) -> list[tuple[bytes, Any]]:
        """Every message queued now, or ``[]`` (see ``Mailbox.recv_batch_nowait``)."""
        self.polls += 1
        if self.on_poll is not None:
            self.on_poll()
        if self._closed:
            raise anyio.ClosedResourceError
        batch, self._queued = self._queued, []
        return batch

    def send_many(self, items: list[tuple[bytes, Any]]) -> None:
        """Keep ``items`` in :attr:`sent`."""
        self.flushes += 1
        self.sent += items
        self._sent_changed.set()
        self._sent_changed = anyio.Event()

    def send_client(self, identity: bytes, message: Any) -> None:
        """Keep a client reply in :attr:`sent`."""
        self.send_many([(identity, message)])

    def send_clients(self, items: list[tuple[bytes, Any]]) -> None:
        """Keep client replies in :attr:`sent`."""
        self.send_many(items)

    async def wait_sent(self, count: int) -> list[tuple[bytes, Any]]:
        """Wait until at least ``count`` messages were sent; returns :attr:`sent`."""
        while len(self.sent) < count:
            await self._sent_changed.wait()
        return self.sent
