"""How a flood of refused messages is logged: the first few of each interval one by one, the
rest as one summary line with their counts by reason.

Any peer can send what a process refuses (a malformed frame, a forged Outcome, a bad Ready),
hundreds to a frame: a line each was a log flood. So a :class:`LogBudget` counts each refusal
by reason, tells its caller whether this one may have a line of its own (the caller writes
that line, with what an operator needs to find the peer), and writes one summary line for the
rest once the interval is over. Time is the caller's ``now``, in the unit of ``interval``: the
transport reads a monotonic clock, the worker pool passes the time of its batch. A flood of any
length writes at most ``detail + 1`` lines an interval.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import structlog

__all__ = ["LogBudget", "at_doubling"]

log = structlog.get_logger()


class LogBudget:
    """Counts one kind of refusal by reason and decides which are logged one by one.

    Args:
        summary: the event of the summary line (``frames_dropped``, ``outcomes_ignored``).
        interval: the length of one logging interval, in the unit of the ``now`` given.
        detail: refusals logged one by one per interval; the rest are summarised.
        level: the summary line's level.
        fields: put on the summary line too (the socket's address).

    Attributes:
        counts: every refusal counted since the start, by reason.
        unlogged: this interval's counts of the refusals not logged one by one (empty when
            there is nothing for :meth:`tick` to summarise: a hot caller asks this attribute
            instead of calling ``tick`` every time).
    """

    __slots__ = ("_detail", "_fields", "_interval", "_level", "_logged", "_started", "_summary", "counts", "unlogged")

    def __init__(self, summary: str, *, interval: float, detail: int = 10, level: str = "warning", **fields: Any) -> None:
        self._summary, self._interval, self._detail, self._level, self._fields = summary, interval, detail, level, fields
        self._started: float | None = None
        self._logged = 0
        self.counts: dict[str, int] = {}
        self.unlogged: dict[str, int] = {}

    def admit(self, reason: str, now: float) -> bool:
        """Count one refusal for ``reason`` (one of a few words: it is a counter's key); whether
        it may be logged on a line of its own (else it is in the interval's summary)."""
        self.counts[reason] = self.counts.get(reason, 0) + 1
        if self._started is None or now - self._started >= self._interval:
            self.flush()
            self._started, self._logged = now, 0
        if self._logged < self._detail:
            self._logged += 1
            return True
        self.unlogged[reason] = self.unlogged.get(reason, 0) + 1
        return False

    def tick(self, now: float) -> None:
        """Write the summary of an interval that is over (cheap when nothing was suppressed)."""
        if self.unlogged and self._started is not None and now - self._started >= self._interval:
            self.flush()

    def flush(self) -> None:
        """One summary line for the refusals not logged one by one, if any."""
        if self.unlogged:
            getattr(log, self._level)(self._summary, **self._fields, count=sum(self.unlogged.values()),
                                      by_reason=dict(sorted(self.unlogged.items())))
            self.unlogged = {}


def at_doubling(counts: MutableMapping[str, int], reason: str) -> int:
    """Count one more ``reason`` in ``counts``; its new count when that is 1, 2, 4, 8... (worth a
    line of its own: a flood of any length writes a few, each with the count so far), else 0.
    The lighter budget, for refusals rare enough to need no interval's summary."""
    n = counts[reason] = counts.get(reason, 0) + 1
    return n if n & (n - 1) == 0 else 0
