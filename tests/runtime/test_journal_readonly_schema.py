"""A journal crafted by hand is read with its schema distrusted and nothing written at all."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ontoflow.runtime.journal import CommitBatch, RunRow, open_journal, open_journal_readonly


def _crafted(tmp_path: Path) -> Path:
    path = tmp_path / "j.sqlite"
    with open_journal(path) as journal:
        batch = CommitBatch()
        batch.sources["h1"] = b"source"
        batch.runs.append(RunRow(run_id="r1", source_hash="h1", submitted_ms=10))
        batch.fact("r1", "fact", 10, b"\x01")
        journal.commit(batch)
    conn = sqlite3.connect(path)  # what someone handing the file over adds to it
    conn.execute("CREATE VIEW peek AS SELECT file FROM pragma_database_list")
    conn.execute("CREATE TRIGGER t AFTER INSERT ON facts BEGIN SELECT * FROM pragma_database_list; END")
    conn.commit()
    conn.close()
    return path


@pytest.mark.parametrize("live", [False, True], ids=["closed", "with-wal"])
def test_a_crafted_schema_may_not_use_unsafe_virtual_tables_and_nothing_is_written(tmp_path: Path, live: bool) -> None:
    path = _crafted(tmp_path)
    if live:
        (tmp_path / "j.sqlite-wal").write_bytes(b"")  # opened mode=ro, not immutable
    with open_journal_readonly(path) as ro:
        assert [r.run_id for r in ro.runs()] == ["r1"]  # the journal still reads
        with pytest.raises(sqlite3.OperationalError, match="unsafe use"):
            ro._conn.execute("SELECT * FROM peek").fetchall()
        with pytest.raises(sqlite3.OperationalError, match="readonly"):  # not even a TEMP table
            ro._conn.execute("CREATE TEMP TABLE scratch(a)")
