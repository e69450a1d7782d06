"""A commit SQLite refuses is logged with SQLite's reason and the journal's path.

The daemon retries a failed commit and logged only the error's type (``commit_failed
error=JournalError``), and clients are told ``disk full?``: an operator could not tell a full
disk from a read-only file system, an I/O error or damage. The journal now says SQLite's reason
once (``journal_write_failed``), and that it recovered.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from ontoflow.runtime.journal import CommitBatch, JournalError, RunRow, open_journal


def _batch(run_id: str, size: int) -> CommitBatch:
    batch = CommitBatch()
    batch.sources["h"] = b"source"
    batch.runs.append(RunRow(run_id=run_id, source_hash="h", submitted_ms=1))
    batch.fact(run_id, "fact", 1, os.urandom(size))
    return batch


def test_a_refused_commit_names_sqlites_reason_once(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    with open_journal(path) as journal:
        journal.commit(_batch("r0", 100))
        # A file size limit (Python ignores SIGXFSZ): writes past it fail as on a full disk.
        resource.setrlimit(resource.RLIMIT_FSIZE, (os.path.getsize(f"{path}-wal") + 8192, hard))
        try:
            with capture_logs() as logs:
                for _ in range(3):  # retried: said once
                    with pytest.raises(JournalError):
                        journal.commit(_batch("r1", 1 << 20))
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        failed = [e for e in logs if e["event"] == "journal_write_failed"]
        assert len(failed) == 1 and failed[0]["path"] == str(path)
        assert failed[0]["reason"] in ("disk I/O error", "database or disk is full")  # EFBIG: SQLite says I/O
        with capture_logs() as logs:
            journal.commit(_batch("r1", 100))
        assert [e["event"] for e in logs] == ["journal_write_recovered"]
