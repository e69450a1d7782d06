"""The journal file: schema, group commit, reads, pruning, and refusing what it cannot trust."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import ontoflow.runtime.journal
from ontoflow import runtime
from ontoflow.runtime.journal import (
    SCHEMA_VERSION,
    CommitBatch,
    JournalCorruptError,
    JournalVersionError,
    RunRow,
    open_journal,
)

REPO = Path(__file__).resolve().parents[2]


def _batch(run_id: str, *, key: str | None = None, ended: bool = False) -> CommitBatch:
    batch = CommitBatch()
    batch.sources["h1"] = b"source"
    batch.runs.append(RunRow(run_id=run_id, source_hash="h1", submitted_ms=10, idempotency_key=key))
    batch.fact(run_id, "fact", 10, b"f1")
    if ended:
        batch.fact(run_id, "fact", 20, b"f2")
        batch.end(run_id, "completed", 20)
    return batch


def test_exports_sorted() -> None:
    assert runtime.journal.__all__ == sorted(runtime.journal.__all__)


def test_a_commit_is_read_back_after_reopening(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    with open_journal(path) as journal:
        journal.commit(_batch("r1", key="k1"))
        journal.commit(_batch("r2", ended=True))
    with open_journal(path) as journal:
        assert [r.run_id for r in journal.unfinished()] == ["r1"]
        assert journal.run_by_key("k1").run_id == "r1"
        assert journal.run("r2").status == "completed" and journal.run("r2").ended_ms == 20
        assert [f.body for f in journal.facts("r2")] == [b"f1", b"f2"]
        assert [f.run_id for f in journal.unfinished_facts()] == ["r1"]
        assert journal.source("h1") == b"source"
        assert [r.run_id for r in journal.runs(status="completed")] == ["r2"]


@pytest.mark.parametrize("facts", [1, 127, 128, 129, 421])
def test_every_fact_of_a_batch_is_kept_in_its_order(tmp_path: Path, facts: int) -> None:
    # A batch's facts go in as multi-row statements of a few fixed sizes: no row may be lost,
    # doubled or reordered at the seams between them, whatever the count.
    batch = CommitBatch()
    for run_id in ("a", "b", "c"):
        batch.runs.append(RunRow(run_id=run_id, source_hash="h1", submitted_ms=10))
    for i in range(facts):
        batch.fact("abc"[i % 3], "fact", i, i.to_bytes(2, "big"))
    with open_journal(tmp_path / "j.sqlite") as journal:
        journal.commit(batch)
        for n, run_id in enumerate("abc"):
            expected = list(range(n, facts, 3))
            assert [int.from_bytes(f.body, "big") for f in journal.facts(run_id)] == expected
            assert [f.at_ms for f in journal.facts(run_id)] == expected


def test_a_failed_batch_writes_nothing(tmp_path: Path) -> None:
    with open_journal(tmp_path / "j.sqlite") as journal:
        journal.commit(_batch("r1", key="k"))
        with pytest.raises(runtime.journal.JournalError):
            journal.commit(_batch("r2", key="k"))  # the key is taken: the whole batch rolls back
        assert journal.run("r2") is None and journal.facts("r2") == []


def test_prune_drops_only_ended_runs_older_than_the_cut(tmp_path: Path) -> None:
    with open_journal(tmp_path / "j.sqlite") as journal:
        journal.commit(_batch("old", ended=True))
        journal.commit(_batch("running"))
        assert journal.prune(ended_before_ms=21) == 1
        assert journal.run("old") is None and journal.facts("old") == []
        assert journal.run("running") is not None and journal.source("h1") == b"source"


def test_a_corrupt_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    path.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(JournalCorruptError, match="refusing to start"):
        open_journal(path)
    assert path.read_bytes().startswith(b"this is not")  # never reset


def test_a_foreign_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE other (x)")
    conn.close()
    with pytest.raises(JournalCorruptError, match="not an ontoflow journal"):
        open_journal(path)


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    open_journal(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    conn.close()
    with pytest.raises(JournalVersionError, match="newer"):
        open_journal(path)


def test_the_daemon_refuses_a_corrupt_journal_with_exit_code_3(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    path.write_bytes(b"\x00garbage" * 512)
    proc = subprocess.run(
        [sys.executable, "-m", "ontoflow", "daemon", "--bind", f"ipc://{tmp_path}/d.sock", "--journal", str(path)],
        cwd=REPO, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 3, proc.stderr
    assert "refusing to start" in proc.stderr and "listening" not in proc.stdout


def test_an_existing_world_readable_journal_is_tightened(tmp_path: Path) -> None:
    import os
    import stat

    path = tmp_path / "j.sqlite"
    open_journal(path).close()
    os.chmod(path, 0o644)
    with open_journal(path):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_one_writer_per_journal_in_one_process_too(tmp_path: Path) -> None:
    from ontoflow.runtime.journal import JournalLockedError

    path = tmp_path / "j.sqlite"
    with open_journal(path):
        with pytest.raises(JournalLockedError) as caught:
            open_journal(path)
        assert caught.value.path == str(path)
    open_journal(path).close()  # released on close


@pytest.mark.parametrize("count", [1, 3, 130, 200])
def test_run_rows_bare_and_full_are_kept_as_given_in_their_order(tmp_path: Path, count: int) -> None:
    # Bare rows (every optional column NULL) and full ones go through different statements:
    # each row must read back exactly as written, and ``unfinished`` keep the submit order.
    rows = []
    for n in range(count):
        full = n % 7 in (3, 4)  # stretches of both kinds, of several lengths
        rows.append(RunRow(run_id=f"r{n:04d}", source_hash="h1", submitted_ms=10, name=f"w{n}",
                           deadline_at_ms=99 if full else None, idempotency_key=f"k{n}" if full else None,
                           trigger_key=f"t{n}" if n % 7 == 4 else None, owner="key" if full else None))
    batch = CommitBatch()
    batch.sources["h1"] = b"source"
    batch.runs.extend(rows)
    for row in rows:
        batch.fact(row.run_id, "fact", 10, row.run_id.encode())
    with open_journal(tmp_path / "j.sqlite") as journal:
        journal.commit(batch)
    with open_journal(tmp_path / "j.sqlite") as journal:
        assert journal.unfinished() == rows
        assert all(journal.run(row.run_id) == row for row in rows)
        facts = journal.facts(rows[-1].run_id)
        assert [f.body for f in facts] == [rows[-1].run_id.encode()] and type(facts[0].body) is bytes


@pytest.mark.parametrize(
    ("row", "why"),
    [
        (RunRow(run_id="r2", source_hash="h1", submitted_ms=2**70), "OverflowError"),  # past SQLite's INTEGER
        (RunRow(run_id="r2", source_hash="h1", submitted_ms=10, name="\ud800"), "UnicodeEncodeError"),
        (RunRow(run_id="r1", source_hash="h1", submitted_ms=10), "UNIQUE constraint failed"),  # r1 is there
    ],
)
def test_a_batch_that_can_never_be_written_is_a_batch_error_and_writes_nothing(tmp_path: Path, row: RunRow,
                                                                              why: str) -> None:
    # Before, an OverflowError or UnicodeEncodeError left the commit as it was (no rollback, not
    # a JournalError), and the daemon's outbox retried the batch for ever.
    with open_journal(tmp_path / "j.sqlite") as journal:
        journal.commit(_batch("r1"))
        poisoned = _batch("r3")
        poisoned.runs.insert(0, row)
        with pytest.raises(ontoflow.runtime.journal.JournalBatchError) as caught:
            journal.commit(poisoned)
        message = str(caught.value)
        assert why in message and "cannot be written" in message and "\ud800" not in message
        assert journal.run("r3") is None and journal.facts("r3") == []
        journal.commit(_batch("r4"))  # the journal goes on with the next batch
        assert journal.run("r4") is not None
