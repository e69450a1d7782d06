"""Who submitted a run is journaled (``runs.owner``, schema version 3; the current one is 4), and older journals get it."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from ontoflow.runtime.journal import SCHEMA_VERSION, CommitBatch, RunRow, open_journal, open_journal_readonly
from tests.runtime.test_journal_catalogue import _V1_SCHEMA

_V2_SCHEMA = _V1_SCHEMA.replace("VALUES ('schema_version', '1')", "VALUES ('schema_version', '2')") + (
    "CREATE TABLE capabilities (id TEXT PRIMARY KEY, metadata BLOB NOT NULL, seen_ms INTEGER NOT NULL);"
)


def _v2_journal(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript("PRAGMA journal_mode=WAL;" + _V2_SCHEMA)
    conn.close()
    return path


def test_the_owner_is_written_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    with open_journal(path) as journal:
        batch = CommitBatch()
        batch.runs.append(RunRow(run_id="mine", source_hash="h", submitted_ms=1, owner="KEY-A"))
        batch.runs.append(RunRow(run_id="anyone", source_hash="h", submitted_ms=2))
        journal.commit(batch)
    with open_journal(path) as journal:
        assert journal.run("mine").owner == "KEY-A" and journal.run("anyone").owner is None
        assert {r.run_id: r.owner for r in journal.unfinished()} == {"mine": "KEY-A", "anyone": None}
    with open_journal_readonly(path) as journal:
        assert journal.run("mine").owner == "KEY-A"


def test_a_version_2_journal_is_upgraded_and_its_runs_have_no_owner(tmp_path: Path) -> None:
    path = _v2_journal(tmp_path / "j.sqlite")
    with open_journal(path) as journal:
        assert journal.run("r1").owner is None
        batch = CommitBatch()
        batch.runs.append(RunRow(run_id="r2", source_hash="h1", submitted_ms=20, owner="KEY-B"))
        journal.commit(batch)
    conn = sqlite3.connect(path)
    version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    conn.close()
    assert version == str(SCHEMA_VERSION) == "5"
    with open_journal(path) as journal:
        assert journal.run("r2").owner == "KEY-B" and [f.body for f in journal.facts("r1")] == [b"f1"]


def test_a_version_2_journal_opened_read_only_is_read_and_not_changed(tmp_path: Path) -> None:
    path = _v2_journal(tmp_path / "j.sqlite")
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in tmp_path.glob("j.sqlite*")}
    with open_journal_readonly(path) as journal:
        assert [(r.run_id, r.owner) for r in journal.unfinished()] == [("r1", None)]
        assert journal.run("r1").owner is None and journal.runs()[0].run_id == "r1"
    after = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in tmp_path.glob("j.sqlite*")}
    assert after == before
