"""A group commit's rows as the journal writes them: what a statement's rows share bound once,
ends in one statement per chunk, and rows that do not fit refused whole. What is read back
never depends on how it was written."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import ontoflow.runtime.journal._rows as rows_module
from ontoflow.runtime.journal import CommitBatch, JournalBatchError, RunRow, open_journal


def _runs(batch: CommitBatch, count: int) -> list[str]:
    ids = [f"r{n:04d}" for n in range(count)]
    batch.runs.extend(RunRow(run_id=run_id, source_hash="h1", submitted_ms=n) for n, run_id in enumerate(ids))
    return ids


def _kinds(path: Path) -> list[tuple[str, str, str]]:
    """Every fact row's run, kind and the kind's SQLite type, in seq order (read as SQL sees it)."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT run_id, kind, typeof(kind) FROM facts ORDER BY seq").fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("count", [1, 129])
@pytest.mark.parametrize("other", [False, True])
def test_fact_kinds_are_kept_as_text_in_their_order(tmp_path: Path, count: int, other: bool) -> None:
    # The orchestrator's two kinds and any other go in as text, in the rows' order.
    batch = CommitBatch()
    ids = _runs(batch, count)
    expected = []
    for n, run_id in enumerate(ids):
        kind = "note" if other and n == count - 1 else ("fact", "dispatched")[n % 2]
        batch.fact(run_id, kind, n, bytes([n % 256]))
        expected.append((run_id, kind, "text"))
    path = tmp_path / "j.sqlite"
    with open_journal(path) as journal:
        journal.commit(batch)
        assert [(f.kind, f.body) for f in journal.facts(ids[-1])] == [(expected[-1][1], bytes([(count - 1) % 256]))]
    assert _kinds(path) == expected


@pytest.mark.parametrize("from_values", [True, False], ids=["update-from", "sqlite-before-3.33"])
@pytest.mark.parametrize("count", [1, 129])
@pytest.mark.parametrize("statuses", [("completed", "failed"), ("completed",)], ids=["mixed", "shared"])
def test_every_run_ended_in_a_batch_is_ended(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int,
                                              from_values: bool, statuses: tuple[str, ...]) -> None:
    # Ends of one status bind it once per statement; mixed ones each bind their own.
    if not from_values:
        monkeypatch.setattr(rows_module, "ENDS_UPDATE", None)  # as with an SQLite before 3.33
    with open_journal(tmp_path / "j.sqlite") as journal:
        batch = CommitBatch()
        ids = _runs(batch, count + 1)
        journal.commit(batch)
        batch = CommitBatch()
        for n, run_id in enumerate(ids[:count]):
            batch.end(run_id, statuses[n % len(statuses)], 1000 + n)
        batch.end("never-submitted", "completed", 5)  # changes nothing, as an UPDATE of no row
        journal.commit(batch)
        for n, run_id in enumerate(ids[:count]):
            row = journal.run(run_id)
            assert (row.status, row.ended_ms) == (statuses[n % len(statuses)], 1000 + n)
        assert journal.run(ids[count]).status == "running" and journal.run(ids[count]).ended_ms is None
        assert journal.run("never-submitted") is None


def _run_rows(path: Path) -> list[tuple]:
    """Every run row with each value's SQLite type, in rowid order (as SQL sees them)."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT *, typeof(source_hash), typeof(name), typeof(status), typeof(submitted_ms), "
                            "typeof(deadline_at_ms) FROM runs ORDER BY rowid").fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("count", [1, 129])
def test_bare_runs_sharing_a_source_or_not_are_written_alike(tmp_path: Path, count: int) -> None:
    # One workflow's submits bind its source, status and name once per statement; runs of
    # several workflows (or names) bind every value; runs with a deadline all columns. The rows
    # are the same, in their order, either way.
    rows = [RunRow(run_id=f"r{n:04d}", source_hash="h1", submitted_ms=n, name="w") for n in range(count)]
    mixed = [RunRow(run_id=f"m{n:04d}", source_hash=("h1", "h2")[n % 2], submitted_ms=n, name=("w", "v")[n % 3 == 0])
             for n in range(count)]
    full = [RunRow(run_id="d0000", source_hash="h1", submitted_ms=1, name="w", deadline_at_ms=9)]
    with open_journal(tmp_path / "one.sqlite") as journal:
        batch = CommitBatch()
        batch.runs.extend(rows + mixed + full)
        journal.commit(batch)
        assert journal.run(f"r{count - 1:04d}") == rows[-1] and journal.run(f"m{count - 1:04d}") == mixed[-1]
    with open_journal(tmp_path / "each.sqlite") as journal:  # a batch per run: no two rows share a statement
        for row in rows + mixed + full:
            batch = CommitBatch()
            batch.runs.append(row)
            journal.commit(batch)
    assert _run_rows(tmp_path / "one.sqlite") == _run_rows(tmp_path / "each.sqlite")
    assert len(_run_rows(tmp_path / "one.sqlite")) == 2 * count + 1


def test_a_run_ended_twice_in_one_batch_ends_as_last_named(tmp_path: Path) -> None:
    with open_journal(tmp_path / "j.sqlite") as journal:
        batch = CommitBatch()
        _runs(batch, 2)
        journal.commit(batch)
        batch = CommitBatch()
        batch.end("r0000", "cancelled", 7)
        batch.end("r0001", "completed", 8)
        batch.end("r0000", "failed", 9)
        journal.commit(batch)
        assert (journal.run("r0000").status, journal.run("r0000").ended_ms) == ("failed", 9)
        assert (journal.run("r0001").status, journal.run("r0001").ended_ms) == ("completed", 8)


@pytest.mark.parametrize("where", ["fact", "end", "facts_that_make_up", "ends_that_make_up"])
def test_a_row_of_the_wrong_width_is_a_batch_error_and_writes_nothing(tmp_path: Path, where: str) -> None:
    # The values of a batch's rows are bound from one flat list: a row one value short would
    # shift every later value into the wrong column; it is refused instead, with the batch.
    with open_journal(tmp_path / "j.sqlite") as journal:
        batch = CommitBatch()
        _runs(batch, 1)
        batch.fact("r0000", "fact", 1, b"ok")
        if where == "fact":
            batch.facts.append(("r0000", "fact", b"short"))  # type: ignore[arg-type]
            batch.fact("r0000", "fact", 3, b"after")
        elif where == "facts_that_make_up":  # one long and one short: the count alone adds up (review15)
            batch.facts.append(("r0000", "fact", 2, b"long", 7))  # type: ignore[arg-type]
            batch.facts.append(("r0000", "fact", 3))  # type: ignore[arg-type]
        elif where == "end":
            batch.ended.append(("completed", "r0000"))  # type: ignore[arg-type]
        else:
            batch.ended.append(("completed", 5, "r0000", "x"))  # type: ignore[arg-type]
            batch.ended.append(("completed", 6))  # type: ignore[arg-type]
        with pytest.raises(JournalBatchError):
            journal.commit(batch)
        assert journal.run("r0000") is None and journal.facts("r0000") == []
