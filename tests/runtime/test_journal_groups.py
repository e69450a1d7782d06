"""Facts of one run at one time stored as one ``group`` row, and read back as they were appended."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ontoflow.runtime.journal import (
    SCHEMA_VERSION,
    CommitBatch,
    FactRow,
    JournalBatchError,
    JournalCorruptError,
    RunRow,
    open_journal,
    open_journal_readonly,
)


def _stored(path: Path) -> list[tuple[str, str, int]]:
    """Every stored fact row's run, kind and time, in seq order (as SQL sees them)."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT run_id, kind, at_ms FROM facts ORDER BY seq").fetchall()
    finally:
        conn.close()


def _appended() -> list[tuple[str, str, int, bytes]]:
    # What an orchestrator's batch holds: each run's fact and its dispatch record at one time,
    # runs interleaved, a time that changes within a run, and a run's lone last fact.
    return [
        ("r1", "fact", 10, b"\x01"), ("r1", "dispatched", 10, b"\x02"),
        ("r2", "fact", 10, b"\x03"), ("r2", "dispatched", 10, b"\x04"), ("r2", "note", 10, b""),
        ("r1", "fact", 11, b"\x05"), ("r1", "dispatched", 12, b"\x06"),
        ("r3", "fact", 10, b"\x07"),
    ]


def _write(path: Path, facts: list[tuple[str, str, int, bytes]], *, ended: bool = False) -> None:
    batch = CommitBatch()
    batch.runs.extend(RunRow(run_id=r, source_hash="h", submitted_ms=1) for r in ("r1", "r2", "r3"))
    for row in facts:
        batch.fact(*row)
    if ended:
        batch.end("r3", "completed", 20)
    with open_journal(path) as journal:
        journal.commit(batch)


def test_facts_of_one_run_at_one_time_are_one_row_and_read_back_as_appended(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    facts = _appended()
    _write(path, facts, ended=True)
    assert _stored(path) == [("r1", "group", 10), ("r2", "group", 10), ("r1", "fact", 11),
                             ("r1", "dispatched", 12), ("r3", "fact", 10)]
    with open_journal(path) as journal:
        for run_id in ("r1", "r2", "r3"):
            assert journal.facts(run_id) == [FactRow(*f) for f in facts if f[0] == run_id]
        unfinished = list(journal.unfinished_facts())
    assert unfinished == [FactRow(*f) for r in ("r1", "r2") for f in facts if f[0] == r]
    with open_journal_readonly(path) as reader:
        assert reader.facts("r2") == [FactRow(*f) for f in facts if f[0] == "r2"]


def test_a_row_of_another_body_type_is_written_alone_as_before(tmp_path: Path) -> None:
    # A body that is not bytes (a bytearray) is not grouped; it is stored and read as before.
    path = tmp_path / "j.sqlite"
    _write(path, [("r1", "fact", 10, b"\x01"), ("r1", "note", 10, bytearray(b"\x02")), ("r1", "fact", 10, b"\x03")])
    assert _stored(path) == [("r1", "fact", 10), ("r1", "note", 10), ("r1", "fact", 10)]
    with open_journal(path) as journal:
        assert [f.body for f in journal.facts("r1")] == [b"\x01", b"\x02", b"\x03"]


def test_the_group_kind_is_the_journals_and_a_batch_using_it_is_refused_whole(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    with open_journal(path) as journal:
        batch = CommitBatch()
        batch.runs.append(RunRow(run_id="r1", source_hash="h", submitted_ms=1))
        batch.fact("r1", "group", 10, b"\x91\x92\xa4fact\xc4\x00")
        with pytest.raises(JournalBatchError) as refused:
            journal.commit(batch)
        assert "ValueError" in str(refused.value)
        assert journal.run("r1") is None and journal.facts("r1") == []


def test_a_group_whose_body_is_damaged_is_named_without_its_bytes(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    _write(path, _appended())
    conn = sqlite3.connect(path)
    conn.execute("UPDATE facts SET body = x'c1c1' WHERE run_id = 'r2' AND kind = 'group'")
    conn.commit()
    seq = conn.execute("SELECT seq FROM facts WHERE run_id = 'r2'").fetchone()[0]
    conn.close()
    with open_journal(path) as journal:
        assert len(journal.facts("r1")) == 4  # another run reads on
        with pytest.raises(JournalCorruptError) as damaged:
            journal.facts("r2")
    message = str(damaged.value)
    assert "'r2'" in message and f"facts row {seq}" in message and "not a group of facts" in message
    assert "c1" not in message.lower()


def test_a_version_4_journal_of_single_rows_is_read_and_upgraded(tmp_path: Path) -> None:
    # What an ontoflow before groups wrote: every fact its own row, version 4.
    path = tmp_path / "j.sqlite"
    _write(path, [])
    conn = sqlite3.connect(path)
    conn.executemany("INSERT INTO facts (run_id, kind, at_ms, body) VALUES (?, ?, ?, ?)", _appended())
    conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with open_journal_readonly(path) as reader:
        assert reader.facts("r1") == [FactRow(*f) for f in _appended() if f[0] == "r1"]
    with open_journal(path) as journal:
        assert journal.facts("r2") == [FactRow(*f) for f in _appended() if f[0] == "r2"]
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    conn.close()


def test_a_row_holding_none_is_refused_as_before_groups(tmp_path: Path) -> None:
    # "No row before" was None: a first row of None run and time took the list's last row
    # (IndexError, out of commit with its transaction open). SQLite refuses it, as before.
    with open_journal(tmp_path / "j.sqlite") as journal:
        batch = CommitBatch()
        batch.fact(None, "fact", None, b"\x01")  # type: ignore[arg-type]
        batch.fact(None, "fact", None, b"\x02")  # type: ignore[arg-type]
        with pytest.raises(JournalBatchError, match="NOT NULL"):
            journal.commit(batch)
        batch = CommitBatch()
        batch.runs.append(RunRow(run_id="r1", source_hash="h", submitted_ms=1))
        batch.fact("r1", "fact", 10, b"\x03")
        journal.commit(batch)  # the failed batch was rolled back: the next one commits
        assert journal.facts("r1") == [FactRow("r1", "fact", 10, b"\x03")]


def test_large_facts_of_one_moment_are_not_grouped_past_the_cap(tmp_path: Path) -> None:
    # Each under SQLite's limit on one value, together they could pass it: a group holds at
    # most GROUP_MAX_BYTES of bodies, and the rest go in rows of their own.
    path = tmp_path / "j.sqlite"
    big = [("r1", "fact", 10, bytes([n]) * (600 * 1024)) for n in range(3)]
    _write(path, [*big, ("r1", "dispatched", 10, b"\x09"), ("r1", "fact", 10, b"\x0a")])
    assert _stored(path) == [("r1", "fact", 10), ("r1", "fact", 10), ("r1", "group", 10)]
    with open_journal(path) as journal:
        assert [f.body[:1] for f in journal.facts("r1")] == [b"\x00", b"\x01", b"\x02", b"\x09", b"\x0a"]
