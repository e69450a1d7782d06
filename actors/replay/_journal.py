"""Replaying runs straight from a journal: one run by id, or every run (``--all``).

The journal is read as it is handed over (open it with
:func:`~runtime.journal.open_journal_readonly`); nothing here writes. A run that cannot be
replayed (its pinned source missing, a row or the source that no longer decodes or compiles)
is answered with its ``error`` rather than stopping the others.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

import msgspec

from ontoflow.actors.orchestrator.engine import RunEngine
from ontoflow.actors.replay._diverge import diverge_run
from ontoflow.actors.replay._results import ReplaySummary, RunReplay
from ontoflow.actors.replay._source import one_line, pinned_source
from ontoflow.actors.replay._verify import verify_run
from ontoflow.actors.replay.errors import PinnedSourceError, RunNotFoundError
from ontoflow.protocols.errors import ProtocolsError
from ontoflow.runtime.journal import Journal, RunRow

__all__ = ["replay_journal", "replay_run"]


def replay_run(journal: Journal, run_id: str, *, new: RunEngine | None = None, against: str = "") -> RunReplay:
    """Replay one run of ``journal``: check its decisions, or (with ``new``) find where ``new``
    would diverge from it.

    Raises:
        RunNotFoundError: when ``run_id`` is not in the journal.
        runtime.journal.JournalError: when the journal cannot be read.
    """
    with _snapshot(journal):
        row = journal.run(run_id)
        if row is None:
            raise RunNotFoundError(f"run {run_id} is not in journal {journal.path}")
        return _replay(journal, row, new, against)


def replay_journal(journal: Journal, *, new: RunEngine | None = None, against: str = "") -> ReplaySummary:
    """Replay every run of ``journal``, oldest first; with ``new``, only the runs of a document
    of the same kind and name (the runs ``new`` would take over), the others counted as skipped.

    Raises:
        runtime.journal.JournalError: when the journal cannot be read.
    """
    with _snapshot(journal):
        rows = list(reversed(journal.runs(limit=max(journal.count(), 1))))
        skipped = 0
        if new is not None:
            kept = [r for r in rows if r.name == new.name]
            skipped = len(rows) - len(kept)
            rows = kept
        runs = [_replay(journal, row, new, against) for row in rows]
    return ReplaySummary(
        runs=runs,
        matched=sum(1 for r in runs if r.matched),
        mismatched=sum(1 for r in runs if r.mismatch is not None),
        failed=sum(1 for r in runs if r.error is not None),
        skipped=skipped,
        in_flight=sum(1 for r in runs if r.matched and r.status in _NOT_ENDED),
    )


# A run still going has no end to check yet: it matches on the decisions made so far.
_NOT_ENDED = frozenset({"running", "suspended"})


def _snapshot(journal: Journal) -> AbstractContextManager[None]:
    """One read transaction over every read of a replay: a live daemon's commit between a
    run's row and its facts made them disagree (a run read ``running`` with the fact that ended
    it). A journal open for writing has no snapshot to give (its writer is the reader)."""
    snapshot = getattr(journal, "snapshot", None)
    return snapshot() if snapshot is not None else nullcontext()


def _replay(journal: Journal, row: RunRow, new: RunEngine | None, against: str) -> RunReplay:
    try:
        source = pinned_source(journal, row)
    except PinnedSourceError as exc:
        return _failed(row, str(exc))
    try:
        # In the try: a row of this run that cannot be read (a group whose body does not decode,
        # a column of the wrong type) fails this run, as a fact that does not decode does.
        rows = journal.facts(row.run_id)
        if new is None:
            return verify_run(row, rows, source)
        return diverge_run(row, rows, source, new, against=against)
    except msgspec.DecodeError as exc:
        return _failed(row, f"a journal row does not decode ({exc})")
    except (ProtocolsError, ValueError) as exc:  # its source no longer compiles under this version
        return _failed(row, f"its pinned source no longer compiles: {one_line(exc)}")
    except Exception as exc:  # noqa: BLE001 - one run's failure is its answer; the others go on
        return _failed(row, f"{type(exc).__name__}: {one_line(exc)}")


def _failed(row: RunRow, error: str) -> RunReplay:
    return RunReplay(run_id=row.run_id, name=row.name, status=row.status, matched=False, error=error)

