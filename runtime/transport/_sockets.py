"""The two socket kinds: an orchestrator's bound ROUTER and a worker's (or client's) DEALER, and
a connected DEALER as an actor's mailbox (:class:`DealerMailbox`; a ROUTER is one as it is)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Coroutine, Iterable
from typing import Any

import anyio
import msgspec
import zmq
from anyio.lowlevel import checkpoint

from ontoflow.protocols.client import (
    CLIENT_HEADER, ClientMessage, Error, client_to_frames, replies_from_frames,
)
from ontoflow.protocols.client_requests import replies_to_bodies, requests_from_frames, requests_to_bodies
from ontoflow.protocols.errors import ProtocolError
from ontoflow.protocols.messages import WireMessage
from ontoflow.runtime.codec import BATCH_BYTES, HEADER, decode, encode, from_frames, pack
from ontoflow.runtime.transport._endpoint import _Endpoint
from ontoflow.runtime.transport._peer import recv_frames_user

__all__ = ["FRAME_MARGIN", "DealerMailbox", "DealerSocket", "RouterSocket", "TooLarge"]

#: Bytes kept free under a peer's message size limit: libzmq compares ``ZMQ_MAXMSGSIZE`` with
#: a frame as it arrives, which CURVE wraps in a MESSAGE command (its name, nonce, MAC and
#: flags): a CURVE peer takes a body of at most its limit less 33 bytes (measured, libzmq 4.3).
FRAME_MARGIN = 64

#: The most a ``Batch`` body adds to the bodies it carries (its array headers and tag: 12).
_BATCH_OVERHEAD = 16

#: A limit at least this big takes every batch ``pack`` makes: only one body, and only one
#: message alone in it, may be over it (the usual flush checks one length).
_ROOMY = BATCH_BYTES + FRAME_MARGIN + _BATCH_OVERHEAD


class TooLarge(msgspec.Struct, frozen=True):
    """A message a ROUTER withheld because its peer would not accept it: ``size`` bytes
    encoded, over the ``limit`` its identity carries (``Peer.max_message_bytes`` less
    :data:`FRAME_MARGIN`). Handed to ``RouterSocket.on_undelivered`` in place of the message."""

    message: WireMessage
    size: int
    limit: int


class RouterSocket(_Endpoint):
    """An orchestrator's bound ROUTER. Obtain one with ``open_router``.

    Attributes:
        address: the bound address, with the real port when bound to port 0 or ``*``.
        on_undelivered: called as ``on_undelivered(identity, messages)`` with wire messages
            the ROUTER refused outright (no connection under that identity now, or its queue
            full): they surely never reached the peer. A message bigger than an identity
            carrying a size limit accepts (``Peer.max_message_bytes``) is never sent either:
            it comes as a :class:`TooLarge` holding it. ``None``: only counted.

    A peer's size limit also bounds its batches: ``send_many`` cuts them under it, so messages
    that each fit all arrive, however many share a flush.
    """

    __slots__ = ("on_undelivered",)

    def __init__(self, sock: zmq.Socket, address: str, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(sock, address, loop)
        self.on_undelivered: Callable[[bytes, list[WireMessage]], None] | None = None

    def with_user_ids(self) -> None:
        """Hand out each peer as a ``Peer`` carrying its CURVE public key (``user_id``); set by
        ``open_router`` on a CURVE ROUTER, whose ZAP authenticator names the key."""
        self._recv = recv_frames_user

    def recv_batch(self, max_batch: int = 512) -> Coroutine[Any, Any, list[tuple[bytes, WireMessage]]]:
        """Wait for at least one valid message, then return every message already queued
        (a coroutine: the receive loop's own, with no frame of this method's around it).

        A frame set that does not decode is logged as ``frame_dropped`` and skipped.

        Args:
            max_batch: the most frame sets read in one call (valid or not).

        Returns:
            ``(peer identity, message)`` pairs in arrival order; never empty.

        Raises:
            anyio.ClosedResourceError: when the socket is closed.
            anyio.BusyResourceError: when another task is already receiving.
        """
        return self._receive(max_batch)

    def recv_batch_nowait(self, max_batch: int = 512) -> list[tuple[bytes, WireMessage]]:
        """Every valid message already queued (up to ``max_batch`` frame sets), without
        waiting or yielding to the event loop; ``[]`` when none is.

        Raises:
            anyio.ClosedResourceError: when the socket is closed.
        """
        return self._receive_nowait(max_batch)

    def _decode(self, frames: list[bytes]) -> list[tuple[bytes, Any]]:
        identity = frames[0]
        if len(frames) == 3 and frames[1] == CLIENT_HEADER:
            try:  # one request, or a client's requests of one turn (``protocols.client_requests``)
                return [(identity, request) for request in requests_from_frames(frames[1:])]
            except ProtocolError as exc:
                # A client waits for one reply per request: it is told what was wrong (the
                # field, never the value) instead of waiting out its timeout; the frame set is
                # still counted and dropped by the receive loop.
                self.send_client(identity, Error(code="invalid_request", message=str(exc)))
                raise
        return [(identity, message) for message in from_frames(frames[1:])]

    @staticmethod
    def _peer_of(frames: list[bytes]) -> tuple[bytes | None, list[bytes]]:
        return frames[0], frames[1:]

    def send(self, identity: bytes, message: WireMessage) -> None:
        """Send ``message`` to the peer ``identity`` without blocking.

        When the peer is unknown (gone, or never connected) or its queue is full, the message
        is counted and dropped (``send_dropped``, summarised as ``sends_dropped`` past a few per interval).

        Raises:
            anyio.ClosedResourceError: when the socket is closed.
        """
        if getattr(identity, "max_message_bytes", 0):  # a registered worker's: measured as send_many does
            self.send_many([(identity, message)])
            return
        if not self._send_one(identity, message) and self.on_undelivered is not None:
            self.on_undelivered(identity, [message])
        self._after_send()

    def send_client(self, identity: bytes, message: ClientMessage) -> None:
        """Send a client API reply to the client ``identity``; behaves as ``send``."""
        header, body = client_to_frames(message)
        self._send_frames(identity, (identity, header, body), message)
        self._after_send()

    def send_clients(self, items: Iterable[tuple[bytes, ClientMessage]]) -> None:
        """Send client API replies, each client's in order and in one ZeroMQ message
        (``protocols.client``: a single reply as ``send_client`` sends it); behaves as
        ``send`` otherwise."""
        per_client: dict[bytes, list[ClientMessage]] = {}
        for identity, message in items:
            queued = per_client.get(identity)
            if queued is None:
                per_client[identity] = [message]
            else:
                queued.append(message)
        for identity, messages in per_client.items():
            # Cut under a byte cap: one message past the client's size limit would be dropped.
            for body in replies_to_bodies(messages):
                if not self._send_frames(identity, (identity, CLIENT_HEADER, body), messages[0]):
                    break  # the client is gone or full: the rest would fail alike
        self._after_send()

    def send_many(self, items: Iterable[tuple[bytes, WireMessage]]) -> None:
        """Send several ``(identity, message)`` pairs, the messages of each peer in order and
        in as few ZeroMQ messages as ``runtime.codec.pack`` makes (a ``Batch`` per peer).

        A peer unknown or full loses what was for it from the body refused on (``send_dropped``,
        as ``send``; handed to ``on_undelivered``); the other peers get theirs. For an identity carrying a
        size limit, the bodies are cut under it, and a message bigger than it on its own is
        withheld (``send_dropped`` reason ``too_large``; ``on_undelivered`` gets a
        :class:`TooLarge`).
        """
        per_peer: dict[bytes, list[WireMessage]] = {}
        for identity, message in items:
            queued = per_peer.get(identity)
            if queued is None:
                per_peer[identity] = [message]
            else:
                queued.append(message)
        withheld: list[tuple[bytes, list[Any]]] = []
        for identity, messages in per_peer.items():
            # Once per peer and flush; a plain identity (no limit known) takes the old path.
            limit = getattr(identity, "max_message_bytes", 0)
            if not limit:
                bodies = pack(messages)
            else:
                # A roomy limit takes every batch ``pack`` makes (only a lone message may be over it).
                bodies = pack(messages) if limit >= _ROOMY else None
                if bodies is None or max(map(len, bodies)) > limit - FRAME_MARGIN:
                    messages, bodies, too_large = self._fitted(identity, messages, limit, bodies)
                    if too_large:
                        withheld.append((identity, too_large))
            for n, body in enumerate(bodies):
                # ROUTER_MANDATORY makes an unknown identity fail on the first frame.
                if not self._send_frames(identity, (identity, HEADER, body), messages[0]):
                    if self.on_undelivered is not None:  # this body and those after it never left
                        left = messages if n == 0 else [m for rest in bodies[n:] for m in decode(rest)]
                        self.on_undelivered(identity, left)
                    break
        self._after_send()
        if withheld and self.on_undelivered is not None:
            # Once the rest is sent: what the callback sends in turn then follows it.
            for identity, too_large in withheld:
                self.on_undelivered(identity, too_large)

    def _fitted(
        self, identity: bytes, messages: list[WireMessage], limit: int, bodies: list[bytes] | None = None
    ) -> tuple[list[WireMessage], list[bytes], list[Any]]:
        """``(messages to send, their bodies, withheld)`` for a peer accepting at most ``limit``
        bytes a message: batches cut under it; a message over it alone is withheld (a
        :class:`TooLarge`, counted as ``too_large``). Each message is measured only when a body
        came out too big; ``bodies``: ``messages`` packed under this limit's cap, if at hand."""
        fit = limit - FRAME_MARGIN
        cap = max(min(BATCH_BYTES, fit - _BATCH_OVERHEAD), 1)
        if bodies is None:
            bodies = pack(messages, cap)
        if max(map(len, bodies)) <= fit:
            return messages, bodies, []
        # Only a message bigger than the cap travels alone in a body: find which.
        kept: list[WireMessage] = []
        withheld: list[Any] = []
        for message in messages:
            size = len(encode(message))
            if size <= fit:
                kept.append(message)
            else:
                withheld.append(TooLarge(message, size, fit))
                self._send_drops.not_sent(identity, type(message).__name__, "too_large")
        return kept, pack(kept, cap) if kept else [], withheld

    def _send_one(self, identity: bytes, message: WireMessage) -> bool:
        return self._send_frames(identity, (identity, HEADER, encode(message)), message)


class DealerSocket(_Endpoint):
    """A worker's (or, with ``client=True``, a client's) connected DEALER. Obtain one with
    ``open_dealer``; a client DEALER sends and receives ``protocols.client`` messages.

    Attributes:
        address: the address connected to.
        peer_max_message_bytes: the largest message the peer accepts (0: unknown; a worker
            sets its daemon's, ``Welcome.max_message_bytes``): ``send_many`` cuts batches under
            it and withholds a message bigger on its own (``send_dropped`` reason
            ``too_large``), which libzmq would answer by dropping the whole connection.
    """

    __slots__ = ("_backlog", "_cap", "_client", "_fit", "_peer_limit")

    def __init__(self, sock: zmq.Socket, address: str, loop: asyncio.AbstractEventLoop, *, client: bool = False) -> None:
        super().__init__(sock, address, loop)
        self._client = client
        self._backlog: list[Any] = []  # a client's replies received and not handed out yet
        self.peer_max_message_bytes = 0

    @property
    def peer_max_message_bytes(self) -> int:
        """The largest message the peer accepts (0: unknown); see the class docstring."""
        return self._peer_limit

    @peer_max_message_bytes.setter
    def peer_max_message_bytes(self, limit: int) -> None:
        self._peer_limit = max(limit, 0)
        # Worked out once, not per flush: the most a body may take, and the byte cap of a batch
        # under it (a batch then never exceeds it: only a message alone in its body can).
        self._fit = self._peer_limit - FRAME_MARGIN if self._peer_limit else sys.maxsize
        self._cap = max(min(BATCH_BYTES, self._fit - _BATCH_OVERHEAD), 1)

    def recv_batch(self, max_batch: int = 512) -> Coroutine[Any, Any, list[WireMessage]]:
        """Wait for at least one valid message, then return every message already queued (a
        coroutine: a worker's is the receive loop's own, with no frame of this method's around it).

        A frame set that does not decode is logged as ``frame_dropped`` and skipped. A client
        socket returns at most ``max_batch`` replies: the others of a frame set that carried
        several (``protocols.client``) are kept, in order, for the next calls, so a
        client reading one reply per request (``recv_batch(1)``) still gets every one.

        Raises:
            anyio.ClosedResourceError: when the socket is closed.
            anyio.BusyResourceError: when another task is already receiving.
        """
        if not self._client:
            return self._receive(max_batch)
        return self._recv_replies(max_batch)

    async def _recv_replies(self, max_batch: int) -> list[Any]:
        if self._backlog and max_batch >= 1:
            await checkpoint()  # ready at once: still yield, as a ready socket does
            ready = self._backlog
        else:
            ready = await self._receive(max_batch)
        batch, self._backlog = ready[:max_batch], ready[max_batch:]  # no await in between: nothing lost
        return batch

    def recv_batch_nowait(self, max_batch: int = 512) -> list[WireMessage]:
        """Every valid message already queued, without waiting or yielding to the event loop
        (as ``recv_batch`` returns them, a client socket's at most ``max_batch``); ``[]`` when
        none is.

        Raises:
            anyio.ClosedResourceError: when the socket is closed.
        """
        if not self._client:
            return self._receive_nowait(max_batch)
        ready = self._backlog or self._receive_nowait(max_batch)
        batch, self._backlog = ready[:max_batch], ready[max_batch:]
        return batch

    def _decode(self, frames: list[bytes]) -> list:
        # A daemon's frame set carries one reply or several to this client (``Replies``).
        return replies_from_frames(frames) if self._client else from_frames(frames)

    def send(self, message: WireMessage) -> None:
        """Send ``message`` to the connected peer without blocking.

        When the outgoing queue is full (the peer is slow or not there), the message is
        counted and dropped (``send_dropped``, summarised past a few per interval).

        Raises:
            anyio.ClosedResourceError: when the socket is closed.
        """
        if self._client:
            header, body = client_to_frames(message)
        elif self._peer_limit:  # measured as send_many does
            self.send_many([message])
            return
        else:
            header, body = HEADER, encode(message)
        self._send_frames(None, (header, body), message)
        self._after_send()

    def send_many(self, messages: list[Any]) -> None:
        """Send ``messages`` in order, in as few ZeroMQ messages as ``runtime.codec.pack``
        makes (a client's: ``protocols.client_requests``, one ``Requests`` body per turn), cut
        under ``peer_max_message_bytes`` when it is known, a message bigger on its own withheld;
        behaves as ``send`` otherwise.

        Raises:
            anyio.ClosedResourceError: when the socket is closed.
        """
        if not messages:
            return
        header, bodies = (CLIENT_HEADER, requests_to_bodies(messages)) if self._client else (HEADER, pack(messages, self._cap))
        fit = self._fit
        for body in bodies:
            if len(body) > fit:  # a message alone in its body (a batch is cut under the cap): withheld
                self._send_drops.not_sent(None, _op_of(body), "too_large")
            elif not self._send_frames(None, (header, body), messages[0]):
                break
        self._after_send()


def _op_of(body: bytes) -> str:
    """The kind of the one message ``body`` holds, to name it in a log line (a rare path)."""
    try:
        return type(decode(body)[0]).__name__
    except ProtocolError:
        return "message"


class DealerMailbox:
    """A connected DEALER as a mailbox and an outbox sink (its one peer has identity ``b""``).

    Args:
        dealer: the socket (``runtime.transport.open_dealer``); closing it closes the mailbox.
    """

    __slots__ = ("dealer",)

    def __init__(self, dealer: DealerSocket) -> None:
        self.dealer = dealer

    async def recv_batch(self) -> list[tuple[bytes, Any]]:
        """The next batch of the DEALER (see ``Mailbox.recv_batch``)."""
        return [(b"", message) for message in await self.dealer.recv_batch()]

    def recv_batch_nowait(self) -> list[tuple[bytes, Any]]:
        """What is queued on the DEALER now (see ``Mailbox.recv_batch_nowait``)."""
        return [(b"", message) for message in self.dealer.recv_batch_nowait()]

    def send_many(self, items: list[tuple[bytes, Any]]) -> None:
        """Send the messages of ``items`` in order, in as few ZeroMQ messages as they fit;
        nothing when the socket closed meanwhile (the session that owned it is over)."""
        try:
            self.dealer.send_many([message for _, message in items])
        except anyio.ClosedResourceError:
            pass

    def send_client(self, identity: bytes, message: Any) -> None:
        """Not for a DEALER: the client API is served by a ROUTER.

        Raises:
            TypeError: always.
        """
        raise TypeError("a DEALER mailbox does not send client replies")

    def send_clients(self, items: list[tuple[bytes, Any]]) -> None:
        """Not for a DEALER (see ``send_client``).

        Raises:
            TypeError: always.
        """
        raise TypeError("a DEALER mailbox does not send client replies")
