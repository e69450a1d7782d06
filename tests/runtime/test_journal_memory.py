"""The journal's memory table: rows written and forgotten with a batch, bounded by time and count
per scope in the same transaction, read back after a reopen; older journals gain the table."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ontoflow.runtime.journal import CommitBatch, open_journal, open_journal_readonly


def _keep(batch: CommitBatch, scope: str, key: str, body: bytes | None, until: int, now: int, most: int) -> None:
    batch.memory[(scope, key)] = None if body is None else (body, until)
    batch.memory_bounds[scope] = (now, most)


def test_rows_are_kept_until_their_time_and_within_a_count_per_scope(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    with open_journal(path) as journal:
        batch = CommitBatch()
        for n, key in enumerate(["a", "b", "c"]):
            _keep(batch, "session", key, key.encode(), 100 + n, now=0, most=10)
        _keep(batch, "conversation", "k", b"a", 50, now=0, most=10)
        journal.commit(batch)
        assert journal.memory("session", 0) == [("a", b"a", 100), ("b", b"b", 101), ("c", b"c", 102)]
        assert journal.memory("session", 101) == [("b", b"b", 101), ("c", b"c", 102)]  # a's time is over
        # A write bounds its scope: the oldest beyond two go, and so do rows past their time;
        # another scope is untouched.
        batch = CommitBatch()
        _keep(batch, "session", "d", b"d", 200, now=101, most=2)
        _keep(batch, "session", "b", None, 0, now=101, most=2)  # forgotten
        journal.commit(batch)
        assert [k for k, _, _ in journal.memory("session", 0)] == ["c", "d"]
        assert journal.memory("conversation", 0) == [("k", b"a", 50)]
    with open_journal_readonly(path) as journal:
        assert [k for k, _, _ in journal.memory("session", 0)] == ["c", "d"]


def test_a_version_3_journal_gains_the_memory_table_and_a_read_only_open_reads_none(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    with open_journal(path):
        pass
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("DROP TABLE memory")
        conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    conn.close()
    with open_journal_readonly(path) as journal:
        assert journal.memory("session", 0) == []
    with open_journal(path) as journal:
        batch = CommitBatch()
        _keep(batch, "session", "s", b"x", 10, now=0, most=5)
        journal.commit(batch)
        assert journal.memory("session", 0) == [("s", b"x", 10)]
