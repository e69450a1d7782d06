"""Worker messages the pool does not apply, counted by reason and logged within a budget.

An Outcome is ignored when its attempt is not in flight on the peer that sends it (a late
answer of a re-dispatched attempt, a re-send, a forger's) or its run has ended; a Ready is
refused when it is malformed or the catalogue is full. Any peer can send either (without CURVE,
one that never registered), 512 to a frame: a line each was a log flood, and an Outcome's ids
were the peer's text, of any length (a 60 MB run id, a 60 MB line). So, as for dropped frames
(``runtime.transport``'s ``DropCounter``), the first ``detail`` of each interval are logged one
by one, with a peer's words cut to a bound, and the rest as one summary line with the counts by
reason. Time is the pool's ``now`` (milliseconds): no clock here.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import structlog

from ontoflow.protocols.messages import Outcome

__all__ = ["MAX_LOGGED_ID_CHARS", "IgnoredOutcomes", "LogBudget", "refusal_kind"]

log = structlog.get_logger()

#: The most characters of a peer's id (run, step, worker) or event a line carries: a run id is at
#: most 128 characters, a step id (node and block) about 257; a longer one is a forger's.
MAX_LOGGED_ID_CHARS = 300


class LogBudget:
    """Counts one kind of refused message by reason and decides which are logged one by one.

    Args:
        event: the line of one message (``outcome_ignored``); ``summary``: the line of the rest.
        level: the level of both (``info``: a late answer is routine).
        interval_ms: the length of one logging interval.
        detail: messages logged one by one per interval; the rest are summarised.

    Attributes:
        counts: every message counted since the start, by reason.
    """

    __slots__ = ("_detail", "_event", "_interval", "_level", "_logged", "_started", "_summary", "_unlogged", "counts")

    def __init__(self, event: str, summary: str, *, level: str = "warning", interval_ms: int = 10_000,
                 detail: int = 10) -> None:
        self._event, self._summary, self._level = event, summary, level
        self._interval, self._detail = interval_ms, detail
        self._started: int | None = None
        self._logged = 0
        self._unlogged: Counter[str] = Counter()
        self.counts: Counter[str] = Counter()

    def note(self, kind: str, now: int, /, **fields: Any) -> None:
        """Count one message refused for ``kind`` (one of a few words: it is a counter's key);
        log it with ``fields`` (bounded by the caller; a ``reason`` among them is the line's
        reason, else ``kind`` is) if this interval's budget allows."""
        reason = kind
        self.counts[reason] += 1
        if self._started is None or now - self._started >= self._interval:
            self.flush()
            self._started, self._logged = now, 0
        if self._logged >= self._detail:
            self._unlogged[reason] += 1
            return
        self._logged += 1
        fields.setdefault("reason", reason)
        getattr(log, self._level)(self._event, **fields)

    def tick(self, now: int) -> None:
        """Write the summary of an interval that is over (cheap when nothing was suppressed)."""
        if self._unlogged and self._started is not None and now - self._started >= self._interval:
            self.flush()

    def flush(self) -> None:
        """One summary line for the messages not logged one by one, if any."""
        if self._unlogged:
            getattr(log, self._level)(self._summary, count=sum(self._unlogged.values()), by_reason=dict(sorted(self._unlogged.items())))
            self._unlogged = Counter()


class IgnoredOutcomes(LogBudget):
    """The budget of ``outcome_ignored`` lines (``outcomes_ignored`` for the rest)."""

    __slots__ = ()

    def __init__(self, *, interval_ms: int = 10_000, detail: int = 10) -> None:
        super().__init__("outcome_ignored", "outcomes_ignored", level="info", interval_ms=interval_ms, detail=detail)

    def ignored(self, outcome: Outcome, reason: str, now: int) -> None:
        """Count ``outcome``, ignored for ``reason``, and log it if this interval's budget allows."""
        cut = MAX_LOGGED_ID_CHARS
        self.note(reason, now, run_id=outcome.run_id[:cut], step_id=outcome.step_id[:cut], attempt=outcome.attempt,
                  outcome=outcome.event[:cut])


_FIRST_WORD = re.compile(r"[a-z_]*")


def refusal_kind(reason: str) -> str:
    """The counter's key of a refusal's text: its first word (``worker_id``, ``capabilities``,
    ``protocol``...), ours: the text goes on with numbers and a peer's words, a key each."""
    return _FIRST_WORD.match(reason).group() or "other"  # type: ignore[union-attr]
