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


def test_a_pipeline_run_is_drawn_where_its_connection_is_not_defined(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The run was compiled again with its connections resolved: on a machine without
    # "@default" (or without its secret), `ontoflow graph --run` was a ConnectionResolutionError
    # traceback. Drawing runs no step: the connection stays a name.
    import msgspec

    from ontoflow.actors.capability import load_capabilities
    from ontoflow.actors.orchestrator import compile_document, document_kind, encode_source
    from ontoflow.actors.orchestrator.engine import RunSubmitted
    from ontoflow.protocols.documents import decode_document
    from ontoflow.runtime.cli._options import BUILTIN_CAPABILITIES
    from ontoflow.runtime.journal import CommitBatch, RunRow, open_journal

    pipeline = Path(__file__).resolve().parents[3] / "configs/examples/pipelines/sqlite_to_csv.yaml"
    document = decode_document(pipeline.read_bytes(), ".yaml")
    catalog = {c.metadata.id: c.metadata for c in load_capabilities([BUILTIN_CAPABILITIES])}
    monkeypatch.setenv("ONTOFLOW_CONNECTION_DEFAULT", str(tmp_path / "db.sqlite"))
    kind = document_kind(document)
    compiled = compile_document(document, catalog, kind=kind)
    source_hash, body = encode_source(document, compiled, kind=kind)
    batch = CommitBatch()
    batch.sources[source_hash] = body
    batch.runs.append(RunRow(run_id="p1", source_hash=source_hash, submitted_ms=1_000, name=compiled.name))
    batch.fact("p1", "fact", 1_000, msgspec.msgpack.encode(RunSubmitted(run_id="p1", inputs={}, now_ms=1_000)))
    with open_journal(tmp_path / "j.db") as journal:
        journal.commit(batch)
    monkeypatch.delenv("ONTOFLOW_CONNECTION_DEFAULT")
    overlay = overlay_from_journal(tmp_path / "j.db", "p1")
    assert overlay.status == "running" and overlay.document["name"] == compiled.name
