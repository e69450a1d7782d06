"""The journal against files and rows it did not write (found by harden11).

- An open that fails (the path names a file that is no SQLite database) left ``<path>.lock``
  beside the user's file for ever, and had made the user's file owner-only first: now the
  lock file it created goes with it, and a mode is tightened only once the file is a journal.
- A read-only open took an empty ``-wal`` for a journal nobody writes and opened it
  ``immutable=1``, which reads no WAL: a live daemon's WAL is empty right after a checkpoint,
  and the reader never saw what the daemon committed next.
- A row that is not what the schema promises (text that is not UTF-8: ``sqlite3`` raised an
  ``OperationalError`` quoting the bytes; a fact body stored as text) reached the reader's
  caller as an internal exception: now a ``JournalCorruptError`` naming the run and the row.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import stat
from pathlib import Path

import pytest

from ontoflow.runtime.journal import (
    CommitBatch,
    JournalCorruptError,
    RunRow,
    open_journal,
    open_journal_readonly,
    open_shared_journal,
)


def _write(journal, run_id: str) -> None:
    batch = CommitBatch()
    batch.sources["h1"] = b"source"
    batch.runs.append(RunRow(run_id=run_id, source_hash="h1", submitted_ms=10))
    batch.fact(run_id, "fact", 10, b"\x01")
    journal.commit(batch)


@pytest.mark.parametrize("opener", [open_journal, open_shared_journal], ids=["owner", "shared"])
@pytest.mark.parametrize("content", [b"my notes, not a journal\n" * 100, b"SQLite format 3\x00" + b"\xff" * 200])
def test_a_failed_open_leaves_no_lock_file_beside_the_file_and_its_mode_alone(
        tmp_path: Path, content: bytes, opener) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    path.chmod(0o644)
    for _ in range(2):  # and again: the next open is refused the same way
        with pytest.raises(JournalCorruptError):
            opener(path)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    assert path.read_bytes() == content
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_a_lock_file_that_was_there_before_a_failed_open_stays(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    with open_journal(path) as journal:
        _write(journal, "r1")
    path.write_bytes(b"damaged" * 100)
    with pytest.raises(JournalCorruptError):
        open_journal(path)
    assert (tmp_path / "j.sqlite.lock").exists()  # not ours to remove: another open made it


def test_a_journal_opens_after_a_failed_open_removed_the_lock_file(tmp_path: Path) -> None:
    bad, good = tmp_path / "bad.sqlite", tmp_path / "good.sqlite"
    bad.write_bytes(b"x" * 100)
    with pytest.raises(JournalCorruptError):
        open_journal(bad)
    bad.unlink()
    with open_journal(bad) as journal:  # the same path, now a fresh journal: locked and used
        _write(journal, "r1")
        # The lock it took is the one at the path (probed there: a shared open is refused
        # earlier now, by the journal file's own lock).
        fd = os.open(f"{bad}.lock", os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    with open_journal(good) as journal:
        _write(journal, "r1")


def test_a_read_only_open_of_a_live_journal_with_an_empty_wal_sees_later_commits(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    journal = open_journal(path)
    try:
        _write(journal, "r1")
        journal._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # as after a full disk: the WAL is empty
        assert (tmp_path / "j.sqlite-wal").stat().st_size == 0
        with open_journal_readonly(path) as reader:
            assert [r.run_id for r in reader.runs()] == ["r1"]
            _write(journal, "r2")  # the daemon goes on
            assert reader.run("r2") is not None
            assert [r.run_id for r in reader.runs()] == ["r2", "r1"]
    finally:
        journal.close()


def _damage(path: Path, statement: str) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute(statement)
        conn.commit()
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("statement", "read", "words"),
    [
        ("UPDATE runs SET name = CAST(x'ff736563726574' AS TEXT) WHERE run_id = 'r2'", lambda j: j.runs(),
         "run 'r2': runs row 2 cannot be read (its name is not UTF-8 text)"),
        ("UPDATE runs SET name = CAST(x'ff736563726574' AS TEXT) WHERE run_id = 'r2'", lambda j: j.run("r2"),
         "run 'r2': runs row 2 cannot be read (its name is not UTF-8 text)"),
        ("UPDATE runs SET submitted_ms = 'secret' WHERE run_id = 'r2'", lambda j: j.unfinished(),
         "run 'r2': runs row 2 cannot be read (its submitted_ms is not of its type)"),
        ("UPDATE facts SET kind = CAST(x'ff736563726574' AS TEXT) WHERE run_id = 'r2'", lambda j: j.facts("r2"),
         "run 'r2': facts row 2 cannot be read (its kind is not UTF-8 text)"),
        ("UPDATE facts SET body = 'secret' WHERE run_id = 'r2'", lambda j: list(j.unfinished_facts()),
         "run 'r2': facts row 2 cannot be read (its body is not of its type)"),
    ],
    ids=["runs-utf8", "run-utf8", "runs-type", "facts-utf8", "facts-type"],
)
@pytest.mark.parametrize("opener", [open_journal, open_journal_readonly], ids=["writer", "reader"])
def test_a_row_that_cannot_be_read_is_a_corrupt_journal_naming_the_run_and_the_row(
        tmp_path: Path, statement: str, read, words: str, opener) -> None:
    path = tmp_path / "j.sqlite"
    with open_journal(path) as journal:
        _write(journal, "r1")
        _write(journal, "r2")
    _damage(path, statement)
    journal = opener(path)
    try:
        with pytest.raises(JournalCorruptError) as caught:
            read(journal)
        assert words in str(caught.value) and str(path) in str(caught.value)
        assert "secret" not in str(caught.value)  # the value is never quoted
        assert [f.body for f in journal.facts("r1")] == [b"\x01"]  # the sound run still reads
    finally:
        journal.close()


@pytest.mark.parametrize("opener", [open_journal, open_journal_readonly], ids=["writer", "reader"])
def test_a_damaged_memory_or_catalogue_row_is_named_never_read_as_nothing(tmp_path: Path, opener) -> None:
    # Before: the "no such table" guard of an older journal caught sqlite3's error for text
    # that is not UTF-8 too, so one damaged row read as no memory and no catalogue at all:
    # every session's memory and the journaled catalogue silently dropped at each start.
    path = tmp_path / "j.sqlite"
    with open_journal(path):
        pass
    _damage(path, "INSERT INTO memory (scope, key, body, until_ms) VALUES ('edge', CAST(x'ff736563' AS TEXT), x'00', 1)")
    _damage(path, "INSERT INTO capabilities (id, metadata, seen_ms) VALUES (CAST(x'ff736563' AS TEXT), x'00', 1)")
    journal = opener(path)
    try:
        for read, words in ((lambda: journal.memory("edge", 0), "memory row 1 cannot be read (its key is not UTF-8"),
                            (journal.capabilities, "capabilities row 1 cannot be read (its id is not UTF-8")):
            with pytest.raises(JournalCorruptError) as caught:
                read()
            assert words in str(caught.value) and "sec" not in str(caught.value)
    finally:
        journal.close()
