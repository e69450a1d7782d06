"""A journal removed, renamed or replaced while its writer runs is no longer written.

SQLite writes through the descriptors it opened: before, a journal removed while the daemon ran
(a ``tmp`` cleaner, an operator's ``rm``) still took every commit, and every submit was
acknowledged into a file no path named: the next start found an empty journal and the runs
were gone. Now the commit fails as on a full disk (nothing written, retried), naming the file.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from ontoflow.runtime.journal import CommitBatch, JournalError, RunRow, open_journal, open_journal_readonly


def _batch(run_id: str) -> CommitBatch:
    batch = CommitBatch()
    batch.sources["h1"] = b"source"
    batch.runs.append(RunRow(run_id=run_id, source_hash="h1", submitted_ms=10, idempotency_key=f"k-{run_id}"))
    batch.fact(run_id, "fact", 10, b"secret-value")
    return batch


def _runs(path: Path) -> list[str]:
    with open_journal_readonly(path) as reader:
        return sorted(r.run_id for r in reader.runs())


def test_a_removed_journal_takes_no_commit(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    with open_journal(path) as journal:
        journal.commit(_batch("r1"))
        for suffix in ("", "-wal", "-shm"):
            os.unlink(f"{path}{suffix}")
        with capture_logs() as logs, pytest.raises(JournalError) as caught:
            journal.commit(_batch("r2"))
        message = str(caught.value)
        assert str(path) in message and "the journal file was removed or replaced" in message
        assert "secret-value" not in message
        assert [e["event"] for e in logs if e["log_level"] == "critical"] == ["journal_moved"]
        with capture_logs() as again, pytest.raises(JournalError):  # retried: said once, not per try
            journal.commit(_batch("r2"))
        assert not [e for e in again if e["event"] == "journal_moved"]


def test_a_removed_wal_takes_no_commit(tmp_path: Path) -> None:
    # The WAL holds every commit not yet checkpointed: removed, they are lost at the next start.
    path = tmp_path / "j.sqlite"
    with open_journal(path) as journal:
        journal.commit(_batch("r1"))
        os.unlink(f"{path}-wal")
        with pytest.raises(JournalError, match=r"its WAL file \(-wal\) was removed or replaced"):
            journal.commit(_batch("r2"))


def test_a_journal_renamed_and_put_back_is_written_again(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    with open_journal(path) as journal:
        journal.commit(_batch("r1"))
        os.rename(path, tmp_path / "moved.sqlite")
        with pytest.raises(JournalError):
            journal.commit(_batch("r2"))
        os.rename(tmp_path / "moved.sqlite", path)
        with capture_logs() as logs:
            journal.commit(_batch("r2"))  # the held batch goes in once the file is back
        assert "journal_back_in_place" in [e["event"] for e in logs]
    assert _runs(path) == ["r1", "r2"]


def test_a_journal_replaced_by_another_file_takes_no_commit(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    with open_journal(path) as journal:
        journal.commit(_batch("r1"))
        other = tmp_path / "other.sqlite"
        other.write_bytes(path.read_bytes())
        os.replace(other, path)  # a backup restored over the journal in use
        with pytest.raises(JournalError, match="the journal file was removed or replaced"):
            journal.commit(_batch("r2"))


def test_a_change_of_folder_is_no_move(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # SQLite keeps the journal's absolute path: a relative one checked after a chdir named nothing.
    monkeypatch.chdir(tmp_path)
    with open_journal("j.sqlite") as journal:
        journal.commit(_batch("r1"))
        (tmp_path / "elsewhere").mkdir()
        monkeypatch.chdir(tmp_path / "elsewhere")
        journal.commit(_batch("r2"))
    assert _runs(tmp_path / "j.sqlite") == ["r1", "r2"]


def test_the_wal_of_a_journal_named_through_a_link_is_watched_where_sqlite_keeps_it(tmp_path: Path) -> None:
    # SQLite keeps the WAL beside the file the link names: looked for beside the link, it was
    # never found, and its removal took the next commit, acknowledged, then lost (review23a).
    (tmp_path / "real").mkdir()
    link = tmp_path / "link.sqlite"
    link.symlink_to(tmp_path / "real" / "j.sqlite")
    with open_journal(link) as journal:
        journal.commit(_batch("r1"))
        journal.commit(_batch("r2"))
        assert os.path.exists(tmp_path / "real" / "j.sqlite-wal")
        os.unlink(tmp_path / "real" / "j.sqlite-wal")
        with pytest.raises(JournalError, match=r"its WAL file \(-wal\) was removed or replaced"):
            journal.commit(_batch("r3"))
