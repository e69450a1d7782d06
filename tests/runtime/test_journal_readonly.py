"""Opening a journal read-only: every read works and not a byte of the journal changes."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from ontoflow.runtime.journal import (
    SCHEMA_VERSION,
    CommitBatch,
    JournalCorruptError,
    JournalError,
    JournalVersionError,
    RunRow,
    open_journal,
    open_journal_readonly,
)


def _files(folder: Path) -> dict[str, str]:
    """name -> sha256 of every journal file in ``folder`` (the main file, its WAL, its index)."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("j.sqlite*"))}


def _content(folder: Path) -> dict[str, str]:
    """The same without SQLite's shared-memory index (a cache of the WAL any reader may rebuild)."""
    return {name: digest for name, digest in _files(folder).items() if not name.endswith("-shm")}


def _write(journal, run_id: str, facts: int) -> None:
    batch = CommitBatch()
    batch.sources["h1"] = b"source"
    batch.runs.append(RunRow(run_id=run_id, source_hash="h1", submitted_ms=10))
    for i in range(facts):
        batch.fact(run_id, "fact", 10 + i, f"f{i}".encode())
    journal.commit(batch)


def _read_everything(path: Path) -> tuple[list, list, bytes | None]:
    with open_journal_readonly(path) as ro:
        return ro.runs(), ro.facts("r1"), ro.source("h1")


def test_a_closed_journal_is_read_without_creating_or_changing_a_file(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    with open_journal(path) as journal:
        _write(journal, "r1", 3)
    before = _files(tmp_path)
    assert sorted(before) == ["j.sqlite", "j.sqlite.lock"]  # a clean close leaves no WAL (the lock file stays: flock)
    runs, facts, source = _read_everything(path)
    assert [r.run_id for r in runs] == ["r1"]
    assert [f.body for f in facts] == [b"f0", b"f1", b"f2"]
    assert source == b"source"
    assert _files(tmp_path) == before


def test_a_live_journal_is_read_with_its_wal_and_neither_file_changes(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    journal = open_journal(path)
    try:
        _write(journal, "r1", 5)
        before = _content(tmp_path)
        assert (tmp_path / "j.sqlite-wal").stat().st_size > 0  # the facts are still in the WAL
        runs, facts, _ = _read_everything(path)
        assert [r.run_id for r in runs] == ["r1"] and len(facts) == 5
        assert _content(tmp_path) == before
        _write(journal, "r2", 1)  # the writer goes on after a reader came and went
        assert journal.count() == 2
    finally:
        journal.close()


def test_a_read_only_journal_refuses_to_write(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    with open_journal(path) as journal:
        _write(journal, "r1", 1)
    before = _files(tmp_path)
    with open_journal_readonly(path) as ro:
        with pytest.raises(JournalError, match="read-only"):
            ro.commit(CommitBatch())
        with pytest.raises(JournalError, match="read-only"):
            ro.prune(10**15)
    assert _files(tmp_path) == before


def test_a_missing_journal_is_an_error_and_is_not_created(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.sqlite"
    with pytest.raises(JournalError, match="does not exist"):
        open_journal_readonly(path)
    assert not any(tmp_path.iterdir())


def test_a_newer_journal_is_refused_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    with open_journal(path):
        pass
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    conn.close()
    before = _files(tmp_path)
    with pytest.raises(JournalVersionError, match="newer"):
        open_journal_readonly(path)
    assert _files(tmp_path) == before


@pytest.mark.parametrize("content", [b"not a database at all" * 200, b""])
def test_a_file_that_is_not_a_journal_is_refused(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "j.sqlite"
    path.write_bytes(content)
    with pytest.raises(JournalCorruptError):
        open_journal_readonly(path)
    assert path.read_bytes() == content
