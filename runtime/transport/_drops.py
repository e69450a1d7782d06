"""Counting the frames a socket drops, and logging them without letting a flood fill the disk.

A malformed frame is counted by reason (``ProtocolError.reason``) and dropped. The first few
of each interval are logged one by one (``frame_dropped``, with the peer and the sizes: what
an operator needs to find a broken peer); past that, nothing per frame: once the interval is
over, one ``frames_dropped`` line carries the counts by reason of everything dropped in it.
A flood of any length therefore writes at most ``detail + 1`` lines per interval.
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
    """

    __slots__ = ("_address", "_clock", "_detail", "_interval", "_logged", "_started", "_totals", "_window")

    def __init__(self, address: str, *, clock: Callable[[], float] = time.monotonic,
                 interval_s: float = SUMMARY_INTERVAL_S, detail: int = DETAIL_PER_INTERVAL) -> None:
        self._address = address
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
        self._totals[reason] = self._totals.get(reason, 0) + 1
        now = self._clock()
        if now - self._started >= self._interval:
            self.flush()
            self._started, self._logged = now, 0
        if self._logged < self._detail:
            self._logged += 1
            log.warning("frame_dropped", address=self._address, peer=peer.hex() if peer is not None else None,
                        frames=len(frames), bytes=sum(len(f) for f in frames), reason=message, kind=reason)
        else:
            self._window[reason] = self._window.get(reason, 0) + 1

    def tick(self) -> None:
        """Write the summary of an interval that is over (called on each receive: cheap when
        nothing was suppressed)."""
        if self._window and self._clock() - self._started >= self._interval:
            self.flush()

    def flush(self) -> None:
        """Write one ``frames_dropped`` line for the frames not logged one by one, if any."""
        if self._window:
            log.warning("frames_dropped", address=self._address, count=sum(self._window.values()),
                        by_reason=dict(sorted(self._window.items())))
            self._window = {}

    def statistics(self) -> DropStatistics:
        """What was dropped since the socket opened."""
        return DropStatistics(total=sum(self._totals.values()), by_reason=dict(self._totals))
