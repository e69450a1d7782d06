"""The actor reference: the only handle other code holds on a running actor."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from ontoflow.runtime.actor._envelope import Envelope, ReplySlot
from ontoflow.runtime.errors import ActorDeadError

__all__ = ["ActorRef", "ActorStatistics"]


@dataclass(frozen=True, slots=True)
class ActorStatistics:
    """A snapshot of one actor, as returned by ``ActorRef.statistics()``.

    Attributes:
        name: the actor's name.
        mailbox_depth: envelopes waiting in the mailbox.
        mailbox_size: the mailbox's capacity.
        processed: messages handled so far (replied to or told), failed ones included.
        alive: False once the actor has stopped (normally or by a crash).
    """

    name: str
    mailbox_depth: int
    mailbox_size: int
    processed: int
    alive: bool


class _Cell:
    """State shared by an actor's run loop and its reference (one per ``Actor.run``)."""

    __slots__ = ("dead", "mailbox", "mailbox_size", "name", "processed", "stopped", "task_id")

    def __init__(self, name: str, mailbox: MemoryObjectSendStream[Envelope], size: int) -> None:
        self.name = name
        self.mailbox = mailbox
        self.mailbox_size = size
        self.processed = 0
        self.dead = False
        self.stopped = anyio.Event()
        self.task_id = anyio.get_current_task().id


class ActorRef:
    """Send messages to an actor, ask it questions, stop it.

    A reference is cheap to share; every method is safe to call from any task of the event
    loop that runs the actor.
    """

    __slots__ = ("_cell",)

    def __init__(self, cell: _Cell) -> None:
        self._cell = cell

    @property
    def name(self) -> str:
        """The actor's name."""
        return self._cell.name

    @property
    def alive(self) -> bool:
        """False once the actor has stopped or its mailbox is closed."""
        return not self._cell.dead

    async def tell(self, message: Any) -> None:
        """Deliver ``message`` without waiting for it to be handled; waits while the mailbox
        is full.

        Raises:
            ActorDeadError: when the actor has stopped or is stopping.
        """
        cell = self._cell
        if cell.dead:
            raise ActorDeadError(f"actor {cell.name!r} is stopped")
        try:
            await cell.mailbox.send(Envelope(message))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise ActorDeadError(f"actor {cell.name!r} is stopped") from None

    def tell_nowait(self, message: Any) -> None:
        """Deliver ``message`` if the mailbox has room, without waiting.

        Raises:
            anyio.WouldBlock: when the mailbox is full.
            ActorDeadError: when the actor has stopped or is stopping.
        """
        cell = self._cell
        if cell.dead:
            raise ActorDeadError(f"actor {cell.name!r} is stopped")
        try:
            cell.mailbox.send_nowait(Envelope(message))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise ActorDeadError(f"actor {cell.name!r} is stopped") from None

    async def ask(self, message: Any) -> Any:
        """Deliver ``message`` and wait for the value ``handle`` returns for it.

        Raises:
            ActorDeadError: when the actor is stopped, or stops before replying.
            Exception: whatever ``handle`` raised for this message (the actor keeps running).
        """
        cell = self._cell
        if cell.dead:
            raise ActorDeadError(f"actor {cell.name!r} is stopped")
        reply = ReplySlot()
        try:
            await cell.mailbox.send(Envelope(message, reply))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise ActorDeadError(f"actor {cell.name!r} is stopped") from None
        return await reply.wait()

    async def stop(self) -> None:
        """Close the mailbox and wait until the actor has stopped.

        Messages already in the mailbox are handled first, then ``on_stop`` runs. Idempotent.
        Called from inside the actor's own task (e.g. from ``handle``), it only closes the
        mailbox: waiting there for the actor to stop would wait forever.
        """
        cell = self._cell
        # Closing the only sender ends the actor's ``async for`` once the buffer is empty.
        cell.mailbox.close()
        if anyio.get_current_task().id != cell.task_id:
            await cell.stopped.wait()

    def statistics(self) -> ActorStatistics:
        """Return a snapshot of the actor's mailbox and counters."""
        cell = self._cell
        stats = cell.mailbox.statistics()
        return ActorStatistics(
            name=cell.name,
            mailbox_depth=stats.current_buffer_used,
            mailbox_size=cell.mailbox_size,
            processed=cell.processed,
            alive=not cell.dead,
        )

    def __repr__(self) -> str:
        state = "alive" if not self._cell.dead else "dead"
        return f"<ActorRef {self._cell.name!r} {state}>"
