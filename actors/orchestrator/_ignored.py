"""Worker messages the pool does not apply, counted by reason and logged within a budget.

An Outcome is ignored when its attempt is not in flight on the peer that sends it (a late
answer of a re-dispatched attempt, a re-send, a forger's) or its run has ended; a Ready is
refused when it is malformed or the catalogue is full. Any peer can send either (without CURVE,
one that never registered), 512 to a frame: a line each was a log flood, and an Outcome's ids
were the peer's text, of any length (a 60 MB run id, a 60 MB line). So they are logged as
dropped frames are (``runtime.log_budget.LogBudget``), with a peer's words cut to a bound.
Time is the pool's ``now`` (milliseconds): no clock here.
"""

from __future__ import annotations

import re

import structlog

from ontoflow.protocols.messages import Outcome
from ontoflow.runtime.log_budget import LogBudget

__all__ = ["MAX_LOGGED_ID_CHARS", "IgnoredOutcomes", "RefusedReadys", "refusal_kind"]

log = structlog.get_logger()

#: The most characters of a peer's id (run, step, worker) or event a line carries: a run id is at
#: most 128 characters, a step id (node and block) about 257; a longer one is a forger's.
MAX_LOGGED_ID_CHARS = 300


class IgnoredOutcomes(LogBudget):
    """The budget of ``outcome_ignored`` lines (``outcomes_ignored`` for the rest; ``info``: a
    late answer is routine)."""

    __slots__ = ()

    def __init__(self, *, interval_ms: int = 10_000, detail: int = 10) -> None:
        super().__init__("outcomes_ignored", interval=interval_ms, detail=detail, level="info")

    def ignored(self, outcome: Outcome, reason: str, now: int) -> None:
        """Count ``outcome``, ignored for ``reason``, and log it if this interval's budget allows."""
        if self.admit(reason, now):
            cut = MAX_LOGGED_ID_CHARS
            log.info("outcome_ignored", run_id=outcome.run_id[:cut], step_id=outcome.step_id[:cut],
                     attempt=outcome.attempt, outcome=outcome.event[:cut], reason=reason)


class RefusedReadys(LogBudget):
    """The budget of ``worker_refused`` lines (``workers_refused`` for the rest), counted by the
    first word of the refusal (:func:`refusal_kind`)."""

    __slots__ = ()

    def __init__(self, *, interval_ms: int = 10_000, detail: int = 10) -> None:
        super().__init__("workers_refused", interval=interval_ms, detail=detail)

    def refused(self, worker_id: str, reason: str, now: int) -> None:
        """Count a Ready of ``worker_id`` refused for ``reason``, and log it if the budget allows."""
        if self.admit(refusal_kind(reason), now):
            log.warning("worker_refused", worker_id=worker_id[:64], reason=reason)


_FIRST_WORD = re.compile(r"[a-z_]*")


def refusal_kind(reason: str) -> str:
    """The counter's key of a refusal's text: its first word (``worker_id``, ``capabilities``,
    ``protocol``...), ours: the text goes on with numbers and a peer's words, a key each."""
    return _FIRST_WORD.match(reason).group() or "other"  # type: ignore[union-attr]
