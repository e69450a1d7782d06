"""The edge actors' transport: named in-memory mailboxes on one event loop.

Each edge actor (the Entry, the Planner, the Intent actor) reads a kernel
:class:`~runtime.actor.MemoryMailbox` and sends through a :class:`WireSink` attached to its
outbox: a send puts the message in the named peer's mailbox, tagged with the sender's name
as its identity (the ROUTER convention: a reply goes to the identity a message came from).
Nothing is encoded: the actors share a process, and a hop costs one event-loop wake-up
(``bench/edge_hop.py`` measures it against an ``inproc://`` DEALER/ROUTER pair).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ontoflow.runtime.actor import MemoryMailbox

__all__ = ["ENTRY", "EdgeWire", "WireSink"]

#: The Entry's name on the edge's wire (where the planner's answers go).
ENTRY = b"entry"


class EdgeWire:
    """The named mailboxes of one edge (one per actor, made on first use), and the names
    answered in place: the Entry is no actor but the caller of the edge, so what is sent to it
    is handed to its callback at once (it wakes the ask waiting on it) rather than queued for
    a task that would only pass it on."""

    def __init__(self) -> None:
        self._boxes: dict[bytes, MemoryMailbox] = {}
        self._direct: dict[bytes, Callable[[bytes, Any], None]] = {}

    def route(self, name: bytes, receive: Callable[[bytes, Any], None]) -> None:
        """Hand what is sent to ``name`` to ``receive(sender, message)`` at once."""
        self._direct[name] = receive

    def mailbox(self, name: bytes) -> MemoryMailbox:
        """The mailbox of the actor called ``name``."""
        box = self._boxes.get(name)
        if box is None:
            box = self._boxes[name] = MemoryMailbox()
        return box

    def sink(self, sender: bytes) -> WireSink:
        """What ``sender``'s outbox sends to (``Outbox.attach``)."""
        return WireSink(self, sender)


class WireSink:
    """An outbox sink on an :class:`EdgeWire` (see ``runtime.actor.Sink``).

    Args:
        wire: the mailboxes.
        sender: the name the peers see as the identity of what is sent.
    """

    __slots__ = ("_sender", "_wire")

    def __init__(self, wire: EdgeWire, sender: bytes) -> None:
        self._wire = wire
        self._sender = sender

    def send_many(self, items: list[tuple[bytes, Any]]) -> None:
        """Put each message in the mailbox of its peer, in order."""
        wire, sender = self._wire, self._sender
        for identity, message in items:
            receive = wire._direct.get(identity)
            if receive is not None:
                receive(sender, message)
            else:
                wire.mailbox(identity).put(message, sender)

    def send_client(self, identity: bytes, message: Any) -> None:
        """Not on the edge's wire: client replies leave through the orchestrator's ROUTER.

        Raises:
            TypeError: always.
        """
        raise TypeError("the edge's wire carries no client replies")

    def send_clients(self, items: list[tuple[bytes, Any]]) -> None:
        """Not on the edge's wire (see ``send_client``).

        Raises:
            TypeError: always.
        """
        raise TypeError("the edge's wire carries no client replies")
