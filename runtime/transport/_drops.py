"""Counting the frames a socket drops, and logging them without letting a flood fill the disk.

A malformed frame is counted by reason (``ProtocolError.reason``) and dropped. The first few
of each interval are logged one by one (``frame_dropped``, with the peer and the sizes: what
an operator needs to find a broken peer); past that, nothing per frame: once the interval is
over, one ``frames_dropped`` line carries the counts by reason of everything dropped in it.
A flood of any length therefore writes at most ``detail + 1`` lines per interval.

Messages a socket could not send (an unknown peer, a full queue) are counted the same way by
a ``DropCounter`` made with ``what="send"``: ``send_dropped`` lines, then ``sends_dropped``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import msgspec
import structlog

__all__ = ["DropCounter", "DropStatistics"]

log = structlog.get_logger()

#: Frames logged one by one per interval before the rest are only counted.
DETAIL_PER_INTERVAL = 10

#: Seconds between two summary lines of a flood.
SUMMARY_INTERVAL_S = 10.0


class DropStatistics(msgspec.Struct, frozen=True, kw_only=True):
    """What a socket has dropped since it opened: ``total`` frame sets, and per ``reason``."""

    total: int
    by_reason: dict[str, int]


class DropCounter:
    """Counts dropped frame sets of one socket and decides which to log.

    Args:
        address: the socket's address, for the log lines.
        clock: seconds, monotonic (injected so a test needs no waiting).
        interval_s: the summary interval.
        detail: frame sets logged one by one per interval.
        what: ``frame`` (received frame sets) or ``send`` (messages not sent): names the
            log lines (``frame_dropped`` / ``frames_dropped``, ``send_dropped`` / ``sends_dropped``).
    """

    __slots__ = ("_address", "_clock", "_detail", "_event", "_interval", "_logged", "_started", "_summary",
                 "_totals", "_window")

    def __init__(self, address: str, *, clock: Callable[[], float] = time.monotonic,
                 interval_s: float = SUMMARY_INTERVAL_S, detail: int = DETAIL_PER_INTERVAL, what: str = "frame") -> None:
        self._address = address
        self._event, self._summary = f"{what}_dropped", f"{what}s_dropped"
        self._clock = clock
        self._interval = interval_s
        self._detail = detail
        self._totals: dict[str, int] = {}
        self._window: dict[str, int] = {}  # counts of the frames not logged one by one
        self._logged = 0
        self._started = 0.0

    def dropped(self, peer: bytes | None, frames: list[bytes], reason: str, message: str) -> None:
        """Count one dropped frame set and log it if the interval's detail budget allows.

        Args:
            peer: the sending peer's identity (None on a DEALER).
            frames: the frame set, for its count and size (never logged).
            reason: the drop's reason code.
            message: the drop's description (names a field, never the bytes).
        """
        if self._detailed(reason):
            log.warning(self._event, address=self._address, peer=peer.hex() if peer is not None else None,
                        frames=len(frames), bytes=sum(len(f) for f in frames), reason=message, kind=reason)

    def not_sent(self, peer: bytes | None, op: str, reason: str) -> None:
        """Count one message that could not be sent and log it if the interval's budget allows.

        Args:
            peer: the peer it was for (None on a DEALER).
            op: the message's type name (never its content).
            reason: ``unknown_peer``, ``high_water_mark`` or an errno name.
        """
        if self._detailed(reason):
            log.warning(self._event, address=self._address, peer=peer.hex() if peer is not None else None,
                        op=op, reason=reason)

    def _detailed(self, reason: str) -> bool:
        """Count one drop; whether it may be logged on its own line (else it is summarised)."""
        self._totals[reason] = self._totals.get(reason, 0) + 1
        now = self._clock()
        if now - self._started >= self._interval:
            self.flush()
            self._started, self._logged = now, 0
        if self._logged < self._detail:
            self._logged += 1
            return True
        self._window[reason] = self._window.get(reason, 0) + 1
        return False

    def tick(self) -> None:
        """Write the summary of an interval that is over (called on each receive: cheap when
        nothing was suppressed)."""
        if self._window and self._clock() - self._started >= self._interval:
            self.flush()

    def flush(self) -> None:
        """Write one summary line (``frames_dropped``, ``sends_dropped``) for the drops not
        logged one by one, if any."""
        if self._window:
            log.warning(self._summary, address=self._address, count=sum(self._window.values()),
                        by_reason=dict(sorted(self._window.items())))
            self._window = {}

    def statistics(self) -> DropStatistics:
        """What was dropped since the socket opened."""
        return DropStatistics(total=sum(self._totals.values()), by_reason=dict(self._totals))
