"""Outcomes the pool does not apply, counted by reason and logged within a budget.

An Outcome is ignored when its attempt is not in flight on the peer that sends it (a late
answer of a re-dispatched attempt, a re-send, a forger's) or its run has ended. Any peer can send
Outcomes (without CURVE, one that never registered), 512 to a frame: a line per Outcome was a log
flood, and its ids were the peer's text, of any length (a 60 MB run id, a 60 MB line). So, as for
dropped frames (``runtime.transport``'s ``DropCounter``), the first ``detail`` of each interval
are logged one by one, with their ids cut to a bound, and the rest as one ``outcomes_ignored``
line with the counts by reason. Time is the pool's ``now`` (milliseconds): no clock here.
"""

from __future__ import annotations

from collections import Counter

import structlog

from ontoflow.protocols.messages import Outcome

__all__ = ["IgnoredOutcomes"]

log = structlog.get_logger()

#: The most characters of a peer's id (run, step) or event a line carries: a run id is at most
#: 128 characters, a step id (node and block) about 257; a longer one is a forger's.
MAX_LOGGED_ID_CHARS = 300


class IgnoredOutcomes:
    """Counts ignored Outcomes by reason and decides which are logged one by one.

    Args:
        interval_ms: the length of one logging interval.
        detail: Outcomes logged one by one per interval; the rest are summarised.

    Attributes:
        counts: every Outcome ignored since the start, by reason.
    """

    __slots__ = ("_detail", "_interval", "_logged", "_started", "_unlogged", "counts")

    def __init__(self, *, interval_ms: int = 10_000, detail: int = 10) -> None:
        self._interval, self._detail = interval_ms, detail
        self._started: int | None = None
        self._logged = 0
        self._unlogged: Counter[str] = Counter()
        self.counts: Counter[str] = Counter()

    def ignored(self, outcome: Outcome, reason: str, now: int) -> None:
        """Count ``outcome``, ignored for ``reason``, and log it if this interval's budget allows."""
        self.counts[reason] += 1
        if self._started is None or now - self._started >= self._interval:
            self.flush()
            self._started, self._logged = now, 0
        if self._logged >= self._detail:
            self._unlogged[reason] += 1
            return
        self._logged += 1
        cut = MAX_LOGGED_ID_CHARS
        log.info("outcome_ignored", run_id=outcome.run_id[:cut], step_id=outcome.step_id[:cut], attempt=outcome.attempt,
                 outcome=outcome.event[:cut], reason=reason)

    def tick(self, now: int) -> None:
        """Write the summary of an interval that is over (cheap when nothing was suppressed)."""
        if self._unlogged and self._started is not None and now - self._started >= self._interval:
            self.flush()

    def flush(self) -> None:
        """One ``outcomes_ignored`` line for the Outcomes not logged one by one, if any."""
        if self._unlogged:
            log.info("outcomes_ignored", count=sum(self._unlogged.values()), by_reason=dict(sorted(self._unlogged.items())))
            self._unlogged = Counter()
