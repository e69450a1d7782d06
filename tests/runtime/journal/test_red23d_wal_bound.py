"""The WAL beside a journal comes back to a bound after a burst.

SQLite reuses its WAL from the start after a checkpoint and never makes it smaller: a burst of
one large group commit (here 20 MB of facts) left a WAL of that size for as long as the daemon
ran, beside the same rows in the journal file itself (every byte on disk twice, on the disk the
README's full-disk handling tries to spare). Now ``journal_size_limit`` cuts it back to
``WAL_KEPT_BYTES`` once it is checkpointed.
"""

from __future__ import annotations

import os
from pathlib import Path

from ontoflow.runtime.journal import CommitBatch, RunRow, open_journal, open_shared_journal

#: ``runtime.journal._open.WAL_KEPT_BYTES`` (written out: the test ran against the code before it).
WAL_KEPT_BYTES = 8 << 20


def _burst(runs: int, size: int) -> CommitBatch:
    batch = CommitBatch()
    batch.sources["h"] = b"source"
    for i in range(runs):
        batch.runs.append(RunRow(run_id=f"r{i}", source_hash="h", submitted_ms=1))
        batch.fact(f"r{i}", "fact", 1, os.urandom(size))
    return batch


def _small(n: int) -> CommitBatch:
    batch = CommitBatch()
    batch.fact("r0", "fact", 2 + n, os.urandom(100))
    return batch


def test_the_wal_is_cut_back_after_a_burst(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    wal = Path(f"{path}-wal")
    with open_journal(path) as journal:
        journal.commit(_burst(1_000, 20_000))
        assert wal.stat().st_size > 2 * WAL_KEPT_BYTES  # the burst is in the WAL
        for n in range(1_200):  # past the automatic checkpoint (1,000 pages): the WAL starts over
            journal.commit(_small(n))
        assert wal.stat().st_size <= WAL_KEPT_BYTES
        assert len(journal.facts("r0")) == 1_201  # nothing lost on the way


def test_a_shared_journal_is_bounded_too(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    journal = open_shared_journal(path)
    try:
        assert journal._conn.execute("PRAGMA journal_size_limit").fetchone()[0] == WAL_KEPT_BYTES
    finally:
        journal.close()
