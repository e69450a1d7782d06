"""A run's path read from its journal: read-only for real, whatever the journal's name or age."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from ontoflow.actors.drawing import RunNotFoundError, overlay_from_journal
from tests.actors.replay.recording import record, workflow


def _files(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*") if p.is_file()}


def test_drawing_a_run_creates_no_file_beside_a_cleanly_closed_journal(tmp_path: Path) -> None:
    journal = tmp_path / "j.db"
    record(journal, workflow())
    before = _files(tmp_path)
    overlay = overlay_from_journal(journal, "r1")
    assert [s.block for s in overlay.steps] == ["load", "work", "note"]
    assert _files(tmp_path) == before  # no -wal, no -shm: SQLite's mode=ro alone makes both


def test_a_journal_whose_path_reads_as_a_uri_query_is_read_and_nothing_is_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder = tmp_path / "we?ird#"
    folder.mkdir()
    record(folder / "j.db", workflow())
    monkeypatch.chdir(tmp_path)
    before = _files(tmp_path)
    overlay = overlay_from_journal("we?ird#/j.db", "r1")
    assert overlay.status == "completed"
    assert _files(tmp_path) == before  # not an empty database named "we" beside it


def test_a_journal_of_an_older_schema_is_drawn(tmp_path: Path) -> None:
    journal = tmp_path / "j.db"
    record(journal, workflow())
    with sqlite3.connect(journal) as conn:  # what schema version 2 wrote: no runs.owner, no memory
        conn.execute("ALTER TABLE runs DROP COLUMN owner")
        conn.execute("DROP TABLE memory")
        conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    conn.close()
    assert overlay_from_journal(journal, "r1").status == "completed"


def test_a_journal_of_a_newer_schema_is_refused_naming_its_version(tmp_path: Path) -> None:
    journal = tmp_path / "j.db"
    record(journal, workflow())
    with sqlite3.connect(journal) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.close()
    with pytest.raises(RunNotFoundError, match="schema version 99"):
        overlay_from_journal(journal, "r1")
