"""What a replay answers: per run a :class:`RunReplay`, for a whole journal a :class:`ReplaySummary`.

Plain Structs, so ``--json`` prints them as they are.
"""

from __future__ import annotations

import msgspec

__all__ = ["Mismatch", "ReplaySummary", "RunReplay"]


class Mismatch(msgspec.Struct, frozen=True, kw_only=True):
    """The first decision that differs.

    Attributes:
        fact_index: the fact after which it shows (1 for the first fact, ``RunSubmitted``);
            0 when it shows at the end of the run rather than at a fact.
        fact: the fact's kind (``step_finished``, ``step_lost``...), empty at the end.
        step_id: the step the fact is about, if any.
        block: the block (a plan step for plans) that step ran for, if known.
        signal: the event the fact carried (an outcome's event; ``worker_lost`` for a lost
            step), if any.
        what: ``dispatch`` (a recorded dispatch the engine does not decide), ``decisions`` (the
            commands and routes a fact leads to), ``outcome`` (an outcome for an attempt the
            new version would not have dispatched, or that was never recorded as sent), ``end``
            (status or end time) or ``determinism`` (two replays of the same facts disagree).
        recorded: what was recorded (or decided by the run's own document).
        now: what the engine decides now (or the new document would decide).
    """

    fact_index: int
    fact: str = ""
    step_id: str | None = None
    block: str | None = None
    signal: str | None = None
    what: str
    recorded: str
    now: str


class RunReplay(msgspec.Struct, frozen=True, kw_only=True):
    """One run replayed.

    Attributes:
        run_id: the run.
        kind: ``workflow`` or ``plan`` (a pipeline runs as a plan).
        name: the document's name.
        status: the status the journal recorded (``running`` for an unfinished run).
        matched: every decision checked was made again (``False`` on a mismatch or an error).
        facts: how many facts were re-applied.
        dispatches: how many recorded dispatches were checked.
        unsent: dispatches the engine decided that were never sent (withdrawn while queued,
            or queued when the journal was read).
        status_now, error_now: the end the engine reaches again.
        context_sha256: SHA-256 of the final context encoded with a deterministic msgpack
            encoder (sorted keys): equal to that of the context the daemon answered.
        against: the new document's path for ``--manifest``; empty for a plain replay.
        mismatch: the first decision that differs, if any.
        error: why the run could not be replayed (its source missing or no longer compiling).
    """

    run_id: str
    kind: str = ""
    name: str = ""
    status: str = ""
    matched: bool
    facts: int = 0
    dispatches: int = 0
    unsent: int = 0
    status_now: str = ""
    error_now: str | None = None
    context_sha256: str = ""
    against: str = ""
    mismatch: Mismatch | None = None
    error: str | None = None


class ReplaySummary(msgspec.Struct, frozen=True, kw_only=True):
    """Every run of a journal replayed (``--all``).

    Attributes:
        runs: one :class:`RunReplay` per run, oldest first.
        matched, mismatched, failed: how many matched, showed a mismatch, could not be replayed.
        skipped: runs of other documents, left out of a ``--manifest`` check.
        in_flight: of the matched runs, those not ended when the journal was read (running or
            suspended): their decisions so far were made again, their end is still to come.
    """

    runs: list[RunReplay]
    matched: int
    mismatched: int
    failed: int
    skipped: int = 0
    in_flight: int = 0

    @property
    def ok(self) -> bool:
        """Every run replayed and matched."""
        return self.mismatched == 0 and self.failed == 0
