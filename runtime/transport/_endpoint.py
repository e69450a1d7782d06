"""What a ROUTER and a DEALER share: the non-blocking socket, readiness and the wake-up rules
(see the package docstring for why the loop watches ``ZMQ_FD`` instead of using zmq.asyncio),
and the counting of what a socket drops.

Drops: a malformed frame is counted by reason (``ProtocolError.reason``) and dropped. The first
few of each interval are logged one by one (``frame_dropped``, with the peer and the sizes: what
an operator needs to find a broken peer); past that, nothing per frame: once the interval is
over, one ``frames_dropped`` line carries the counts by reason of everything dropped in it. A
flood of any length therefore writes at most ``detail + 1`` lines per interval. Messages a
socket could not send (an unknown peer, a full queue) are counted the same way by a
``DropCounter`` made with ``what="send"``: ``send_dropped`` lines, then ``sends_dropped``.
"""

from __future__ import annotations

import asyncio
import errno
import time
from collections.abc import Callable
from typing import Any

import anyio
import msgspec
import structlog
import zmq
import zmq.backend

from ontoflow.protocols.errors import ProtocolError
from ontoflow.protocols.messages import WireMessage
from ontoflow.runtime.log_budget import LogBudget
from ontoflow.runtime.loop import yield_now
from ontoflow.runtime.transport._peer import Peer

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "DropCounter", "DropStatistics", "Peer"]

log = structlog.get_logger()

#: Frames logged one by one per interval before the rest are only counted.
DETAIL_PER_INTERVAL = 10

#: Seconds between two summary lines of a flood.
SUMMARY_INTERVAL_S = 10.0


class DropStatistics(msgspec.Struct, frozen=True, kw_only=True):
    """What a socket has dropped since it opened: ``total`` frame sets, and per ``reason``."""

    total: int
    by_reason: dict[str, int]


class DropCounter(LogBudget):
    """Counts dropped frame sets of one socket and decides which to log (a :class:`LogBudget`
    on the socket's own clock).

    Args:
        address: the socket's address, for the log lines.
        clock: seconds, monotonic (injected so a test needs no waiting).
        interval_s: the summary interval.
        detail: frame sets logged one by one per interval.
        what: ``frame`` (received frame sets) or ``send`` (messages not sent): names the
            log lines (``frame_dropped`` / ``frames_dropped``, ``send_dropped`` / ``sends_dropped``).
    """

    __slots__ = ("_address", "_clock", "_event")

    def __init__(self, address: str, *, clock: Callable[[], float] = time.monotonic,
                 interval_s: float = SUMMARY_INTERVAL_S, detail: int = DETAIL_PER_INTERVAL, what: str = "frame") -> None:
        super().__init__(f"{what}s_dropped", interval=interval_s, detail=detail, address=address)
        self._address = address
        self._event = f"{what}_dropped"
        self._clock = clock

    def dropped(self, peer: bytes | None, frames: list[bytes], reason: str, message: str) -> None:
        """Count one dropped frame set and log it if the interval's detail budget allows.

        Args:
            peer: the sending peer's identity (None on a DEALER).
            frames: the frame set, for its count and size (never logged).
            reason: the drop's reason code.
            message: the drop's description (names a field, never the bytes).
        """
        if self.admit(reason, self._clock()):
            log.warning(self._event, address=self._address, peer=peer.hex() if peer is not None else None,
                        frames=len(frames), bytes=sum(len(f) for f in frames), reason=message, kind=reason)

    def not_sent(self, peer: bytes | None, op: str, reason: str) -> None:
        """Count one message that could not be sent and log it if the interval's budget allows.

        Args:
            peer: the peer it was for (None on a DEALER).
            op: the message's type name (never its content).
            reason: ``unknown_peer``, ``high_water_mark`` or an errno name.
        """
        if self.admit(reason, self._clock()):
            log.warning(self._event, address=self._address, peer=peer.hex() if peer is not None else None,
                        op=op, reason=reason)

    def tick(self, now: float | None = None) -> None:
        """Write the summary of an interval that is over, by the socket's clock (called on each
        receive whose counter has something unlogged)."""
        super().tick(self._clock() if now is None else now)

    def statistics(self) -> DropStatistics:
        """What was dropped since the socket opened."""
        return DropStatistics(total=sum(self.counts.values()), by_reason=dict(self.counts))


#: Default ceiling of one incoming message; libzmq drops a peer that sends a bigger one.
DEFAULT_MAX_MESSAGE_BYTES = 64 * 2**20

# Plain ints, not pyzmq's enums: flag arithmetic on an IntFlag goes through enum.__call__,
# which costs microseconds per message on the hot path.
_NOBLOCK = int(zmq.NOBLOCK)
_SNDMORE_NOBLOCK = int(zmq.SNDMORE) | int(zmq.NOBLOCK)
_POLLIN = int(zmq.POLLIN)

# Whether a socket has input (ZMQ_EVENTS shows POLLIN) is asked with ``zmq_poll`` on that one
# socket and a timeout of 0: libzmq answers from ZMQ_EVENTS, processing the socket's command
# queue as reading the option does, but pyzmq's ``Socket.get`` reaches the option through an
# enum lookup that costs twice the rest (10.3k instructions a call against 3.4k; 2.1-3.4 us
# against 1.7-2.4 us on this machine). Only on an open socket: pyzmq would poll a closed
# one's null handle as the file descriptor 0 (every caller checks ``closed`` first).
_zmq_poll = zmq.zmq_poll
_RCVMORE = int(zmq.RCVMORE)

# pyzmq's ``zmq.Socket.send`` is a Python wrapper (routing ids, groups) around its compiled
# backend's (``zmq.Socket``'s base class); frames go through the backend's directly (about
# 0.7 us less per frame: W1 sends five per step).
_send = zmq.backend.Socket.send


def _recv_frames(sock: zmq.Socket) -> list[bytes]:
    """Receive one whole multipart message without blocking.

    pyzmq's ``recv_multipart`` sugar, and every ``getsockopt`` (RCVMORE included), convert
    flags through enums at a cost of microseconds per call; a frame's own ``more`` flag is
    free, so frames are read one by one as ``zmq.Frame``.

    Raises:
        zmq.Again: when no message is queued.
    """
    frames: list[bytes] = []
    while True:
        frame = sock.recv(_NOBLOCK, copy=False)
        frames.append(frame.bytes)
        if not frame.more:
            return frames


class _Endpoint:
    """What a ROUTER and a DEALER share: the socket, readiness and the wake-up rules."""

    __slots__ = ("_drops", "_fd", "_input", "_linger_ms", "_loop", "_more", "_pending", "_recv", "_send_drops", "_sock",
                 "_waiter", "address")

    def __init__(self, sock: zmq.Socket, address: str, loop: asyncio.AbstractEventLoop) -> None:
        self._sock = sock
        self._loop = loop
        self._waiter: asyncio.Future[None] | None = None
        self._pending: list = []
        self._more = False  # the last drain stopped at max_batch: more may be queued
        self._linger_ms = 0
        self._fd: int = sock.get(zmq.FD)
        self._input = [(sock, _POLLIN)]  # what ``_zmq_poll`` asks: ZMQ_EVENTS has POLLIN
        self.address = address
        self._recv = _recv_frames  # a CURVE ROUTER reads the peer's key too (``with_user_ids``)
        self._drops = DropCounter(address)
        # Sends to a peer that left (a client gone before its answer) can come by the
        # thousand: counted and summarised like malformed frames, never a line each.
        self._send_drops = DropCounter(address, what="send")
        # Registered for the socket's whole life: one epoll_ctl, not one per wait.
        loop.add_reader(self._fd, self._on_fd_readable)

    def _on_fd_readable(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            # A receiver is parked: it reads as soon as it runs, before the loop polls again,
            # and its first receive processes libzmq's command queue (which clears the FD) as
            # reading ZMQ_EVENTS here would: one call into libzmq per wake-up instead of two.
            # The FD also signals commands other than input (rarely): the receive then finds
            # nothing and the receiver parks again. A receiver cancelled before it runs leaves
            # the FD readable, and the next call finds no receiver and reads ZMQ_EVENTS below.
            if not waiter.done():
                waiter.set_result(None)
            return
        # Nobody parked (whoever receives next checks ZMQ_EVENTS first): reading it makes
        # libzmq process its command queue, which clears the FD; it must happen, or the
        # level-triggered loop would spin.
        try:
            _zmq_poll(self._input, 0)
        except zmq.ZMQError:
            return

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _after_send(self) -> None:
        # The send may have swallowed the FD edge of a message that arrived meanwhile.
        if self._waiter is not None and _zmq_poll(self._input, 0):
            self._wake()

    async def _receive(self, max_batch: int) -> list:
        """The receive loop shared by both socket kinds (``_drain`` differs)."""
        if self._sock.closed:
            raise anyio.ClosedResourceError
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        batch = self._pending or self._drain(max_batch, False)
        if batch:
            # Ready without waiting: still yield once, so a flooded socket cannot starve the
            # other tasks. The batch is parked meanwhile: a cancellation here loses nothing,
            # the next call returns it.
            self._pending = batch
            await yield_now()
            self._pending = []
            return batch
        while True:
            if self._more:
                # A whole batch of frames that all failed to decode (a flood): the FD was not
                # re-armed, so parking would wait for an edge that never comes while frames
                # are queued. Read on, yielding first so the flood starves nobody.
                await yield_now()
            else:
                # The drain above ended with ZMQ_EVENTS showing no input, which re-arms the FD.
                # Parked here, not in a coroutine of its own: one frame less per wake-up.
                if self._waiter is not None:
                    raise anyio.BusyResourceError("receiving from")
                waiter = self._waiter = self._loop.create_future()
                try:
                    await waiter
                finally:
                    self._waiter = None
            if self._sock.closed:  # closed after the wake-up was sent and before this ran
                raise anyio.ClosedResourceError
            batch = self._drain(max_batch, True)
            if batch:
                return batch

    def _receive_nowait(self, max_batch: int) -> list:
        """What ``_receive`` would return at once, without waiting or yielding; ``[]`` when
        nothing is queued (a spinning receiver calls it in a loop: no exception per miss)."""
        if self._sock.closed:
            raise anyio.ClosedResourceError
        batch = self._pending
        if batch:
            self._pending = []
            return batch
        # ZMQ_EVENTS first (see ``_drain``): a miss costs one poll of libzmq's mailbox, and
        # it re-arms the FD, so a receiver that parks after it still gets the next edge.
        return self._drain(max_batch, False)

    def _drain(self, max_batch: int, known_ready: bool) -> list:
        """Read what is queued, up to ``max_batch`` frame sets, decoding each with ``_decode``;
        a frame set that does not decode is logged and skipped."""
        sock = self._sock
        batch: list = []
        # Asking ZMQ_EVENTS (``_zmq_poll``, about 2 us: libzmq polls its mailbox) is cheaper than
        # a receive that fails with EAGAIN (about 6 us: the same poll and an exception), so it decides
        # whether to read the first message and whether a second one is there; from then on
        # messages are queued up (clients send one request per message), and reading until
        # EAGAIN costs one failure instead of a poll per message.
        ready = known_ready or _zmq_poll(self._input, 0)
        self._more = False
        for n in range(max_batch):
            if not ready:
                break
            try:
                frames = self._recv(sock)
            except zmq.Again:
                break
            if n == max_batch - 1:
                self._more = True
            try:
                batch += self._decode(frames)
            except ProtocolError as exc:
                self._drops.dropped(*self._peer_of(frames), exc.reason, str(exc))
            except Exception:  # the decoders are total; this is the last guard of the loop
                log.exception("frame_decoder_failed", address=self.address)
                self._drops.dropped(*self._peer_of(frames), "internal", "the decoder failed")
            if len(batch) >= max_batch:  # a client's batch body holds many: a turn handles max_batch
                self._more = True
                break
            if n == 0:
                ready = _zmq_poll(self._input, 0)
        # ``tick`` writes the summary of a flood's interval once it is over; it has nothing to
        # do while nothing was suppressed, which is asked here without the two calls.
        if self._drops.unlogged:
            self._drops.tick()
        if self._send_drops.unlogged:
            self._send_drops.tick()
        return batch

    def dropped(self) -> DropStatistics:
        """The frame sets this socket dropped since it opened (that did not decode), by reason."""
        return self._drops.statistics()

    def not_sent(self) -> DropStatistics:
        """The messages this socket could not send since it opened (unknown peer, full queue), by reason."""
        return self._send_drops.statistics()

    def _decode(self, frames: list[bytes]) -> list:
        """The received items of one frame set (a batch body yields several, in order)."""
        raise NotImplementedError

    @staticmethod
    def _peer_of(frames: list[bytes]) -> tuple[bytes | None, list[bytes]]:
        """Split a frame set into the sending peer (None on a DEALER) and the message frames."""
        return None, frames

    def linger_on_close(self, ms: int) -> None:
        """Let messages still queued when the socket closes leave for up to ``ms`` (the
        default is 0: dropped at once). A worker saying its last answers and goodbye sets it;
        the process must then terminate the context (which waits that long at most)."""
        self._linger_ms = ms

    def _close(self) -> None:
        if self._sock.closed:
            return
        self._drops.flush()
        self._send_drops.flush()
        self._loop.remove_reader(self._fd)
        self._sock.close(linger=self._linger_ms)
        waiter, self._waiter = self._waiter, None  # nothing after this polls the closed socket for it
        if waiter is not None and not waiter.done():
            waiter.set_exception(anyio.ClosedResourceError())

    def _send_frames(self, peer: bytes | None, frames: tuple[bytes, ...], message: Any) -> bool:
        """Queue one multipart message without blocking; False (logged as ``send_dropped``)
        when its first frame is refused, so a message is either wholly queued or not at all.

        Raises:
            anyio.ClosedResourceError: when the socket is closed.
        """
        sock = self._sock
        try:
            _send(sock, frames[0], _SNDMORE_NOBLOCK)
        except zmq.ZMQError as exc:
            self._log_send_failure(peer, message, exc)
            return False
        last = len(frames) - 1
        for i in range(1, last):
            _send(sock, frames[i], _SNDMORE_NOBLOCK)
        _send(sock, frames[last], _NOBLOCK)
        return True

    def _log_send_failure(
        self, peer: bytes | None, message: WireMessage, exc: zmq.ZMQError
    ) -> None:
        if exc.errno == zmq.ENOTSOCK or self._sock.closed:
            raise anyio.ClosedResourceError from None
        if exc.errno == zmq.EHOSTUNREACH:
            reason = "unknown_peer"
        elif exc.errno == zmq.EAGAIN:
            reason = "high_water_mark"
        else:
            reason = errno.errorcode.get(exc.errno, str(exc.errno))
        self._send_drops.not_sent(peer, type(message).__name__, reason)
