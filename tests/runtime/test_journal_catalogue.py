"""The journal's capability catalogue, and the journals of schema version 1 that predate it."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from ontoflow.runtime.journal import SCHEMA_VERSION, CommitBatch, RunRow, open_journal, open_journal_readonly

#: The tables of schema version 1, as ontoflow wrote them before the catalogue existed.
_V1_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE sources (hash TEXT PRIMARY KEY, body BLOB NOT NULL);
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY, source_hash TEXT NOT NULL, status TEXT NOT NULL, submitted_ms INTEGER NOT NULL,
    ended_ms INTEGER, deadline_at_ms INTEGER, idempotency_key TEXT UNIQUE, trigger_key TEXT UNIQUE,
    name TEXT NOT NULL DEFAULT ''
);
CREATE INDEX runs_by_status ON runs (status, submitted_ms);
CREATE TABLE facts (seq INTEGER PRIMARY KEY, run_id TEXT NOT NULL, kind TEXT NOT NULL, at_ms INTEGER NOT NULL,
                    body BLOB NOT NULL);
CREATE INDEX facts_by_run ON facts (run_id, seq);
INSERT INTO meta (key, value) VALUES ('schema_version', '1');
INSERT INTO sources (hash, body) VALUES ('h1', x'736f75726365');
INSERT INTO runs (run_id, source_hash, status, submitted_ms) VALUES ('r1', 'h1', 'running', 10);
INSERT INTO facts (run_id, kind, at_ms, body) VALUES ('r1', 'fact', 10, x'6631');
"""


def _v1_journal(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript("PRAGMA journal_mode=WAL;" + _V1_SCHEMA)
    conn.close()
    return path


def test_catalogue_entries_are_written_replaced_and_survive_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    with open_journal(path) as journal:
        assert journal.capabilities() == {}
        batch = CommitBatch()
        batch.capabilities["a.b.c"] = (b"meta-1", 5)
        batch.capabilities["x.y.z"] = (b"meta-x", 5)
        assert batch
        journal.commit(batch)
        again = CommitBatch()
        again.capabilities["a.b.c"] = (b"meta-2", 9)  # offered again with other metadata
        journal.commit(again)
    with open_journal(path) as journal:
        assert journal.capabilities() == {"a.b.c": b"meta-2", "x.y.z": b"meta-x"}
    with open_journal_readonly(path) as journal:
        assert journal.capabilities() == {"a.b.c": b"meta-2", "x.y.z": b"meta-x"}


def test_a_version_1_journal_is_upgraded_when_opened_to_write_and_keeps_its_runs(tmp_path: Path) -> None:
    path = _v1_journal(tmp_path / "j.sqlite")
    with open_journal(path) as journal:
        assert [r.run_id for r in journal.unfinished()] == ["r1"]
        assert [f.body for f in journal.facts("r1")] == [b"f1"] and journal.source("h1") == b"source"
        batch = CommitBatch()
        batch.capabilities["a.b.c"] = (b"meta", 1)
        batch.runs.append(RunRow(run_id="r2", source_hash="h1", submitted_ms=20))
        journal.commit(batch)
    conn = sqlite3.connect(path)
    version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    conn.close()
    assert version == str(SCHEMA_VERSION) == "5"
    with open_journal(path) as journal:
        assert journal.capabilities() == {"a.b.c": b"meta"} and journal.count() == 2


def test_a_version_1_journal_opened_read_only_is_read_and_not_changed(tmp_path: Path) -> None:
    path = _v1_journal(tmp_path / "j.sqlite")
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in tmp_path.glob("j.sqlite*")}
    with open_journal_readonly(path) as journal:
        assert journal.capabilities() == {}  # no catalogue in version 1
        assert [r.run_id for r in journal.unfinished()] == ["r1"]
    after = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in tmp_path.glob("j.sqlite*")}
    assert after == before
