"""``sqlite.extractor`` only reads: a query (a pipeline's setting, maybe a model's) writes no
file anywhere, undoes none of the read-only settings, and a hostile database's schema calls no
function; the step fails naming what was refused (real SQLite files)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import anyio
import pytest

from ontoflow.actors.capabilities.data import SqliteExtractor, read_batches
from ontoflow.protocols import Invoke, StepContext, SystemMetadata

pytestmark = pytest.mark.anyio


def _db(path: Path) -> Path:
    db = sqlite3.connect(path)
    with db:
        db.execute("CREATE TABLE t (id INTEGER, name TEXT)")
        db.executemany("INSERT INTO t VALUES (?, ?)", [(1, "a"), (2, "b")])
    db.close()
    return path


async def _extract(db: Path, query: str, work: Path):
    ctx = StepContext(system=SystemMetadata(run_id="r1", step_id="s1"))
    inputs = {"data.query": query, "data.database": str(db), "data.work_dir": str(work)}
    return await SqliteExtractor().invoke(
        Invoke(run_id="r1", step_id="s1", attempt=1, capability="sqlite.extractor", inputs=inputs, context=ctx))


@pytest.mark.parametrize("query", [
    "VACUUM INTO '{out}/copy.db'",
    "ATTACH '{out}/new.db' AS x",
    "ATTACH 'file:{out}/new.db?mode=rwc' AS x",
])
async def test_a_query_writes_no_file(tmp_path: Path, query: str) -> None:
    db = _db(tmp_path / "shop.db")
    out = tmp_path / "elsewhere"
    out.mkdir()
    result = await _extract(db, query.format(out=out), tmp_path / "work")
    assert result.event == "failure"
    assert "may only read" in result.error and str(out) not in result.error
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("query", ["PRAGMA query_only = OFF", "PRAGMA trusted_schema = ON",
                                   "SELECT * FROM pragma_writable_schema"])
async def test_a_query_cannot_undo_the_read_only_settings(tmp_path: Path, query: str) -> None:
    result = await _extract(_db(tmp_path / "shop.db"), query, tmp_path / "work")
    assert result.event == "failure" and "may only read" in result.error


async def test_reading_queries_still_work(tmp_path: Path) -> None:
    db = _db(tmp_path / "shop.db")
    for query in ("SELECT * FROM t ORDER BY id", "SELECT name, type FROM pragma_table_info('t')",
                  "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 2) SELECT x FROM c"):
        result = await _extract(db, query, tmp_path / "work")
        assert result.event == "success", (query, result.error)
        assert sum(len(b) for b in read_batches(Path(result.outputs["data.dataset"]["path"]))) == 2


async def test_a_wal_database_being_written_is_read_as_one_snapshot(tmp_path: Path) -> None:
    db = _db(tmp_path / "wal.db")
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO t VALUES (3, 'c')")  # not committed: the export does not see it
    try:
        result = await _extract(db, "SELECT * FROM t", tmp_path / "work")
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert result.event == "success", result.error
    assert result.outputs["data.rows"] == 2


async def test_a_file_that_is_not_sqlite_is_a_failure_naming_no_content(tmp_path: Path) -> None:
    fake = tmp_path / "notes.db"
    fake.write_text("password=hunter2\n" * 100)
    result = await _extract(fake, "SELECT * FROM t", tmp_path / "work")
    assert result.event == "failure" and "not a database" in result.error and "hunter2" not in result.error


async def test_a_cancelled_step_interrupts_a_query_that_never_ends(tmp_path: Path) -> None:
    db = _db(tmp_path / "shop.db")
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
    with anyio.fail_after(60):  # a bound on the test only: before the fix the thread never returned
        async with anyio.create_task_group() as tg:
            tg.start_soon(_extract, db, endless, tmp_path / "work")
            await anyio.wait_all_tasks_blocked()  # the query runs in its thread
            tg.cancel_scope.cancel()
    assert not list((tmp_path / "work").rglob("*.rows"))


@pytest.mark.parametrize(("query", "kept"), [
    ("SELECT 'the-customer-list hunter2", "unrecognized token"),
    ("SELECT id FROM t WHERE name = \"hunter2", "unrecognized token"),
    # The first row reads; the second fails while the rows stream (json() of a text it cannot read).
    ("SELECT json(CASE id WHEN 1 THEN '[1]' ELSE '{hunter2' END) FROM t", "malformed JSON"),
])
async def test_a_failing_query_is_named_without_its_literals(tmp_path: Path, query: str, kept: str) -> None:
    result = await _extract(_db(tmp_path / "shop.db"), query, tmp_path / "work")
    assert result.event == "failure" and "the query failed" in result.error and kept in result.error
    assert "hunter2" not in result.error


async def test_a_missing_table_is_still_named(tmp_path: Path) -> None:
    result = await _extract(_db(tmp_path / "shop.db"), "SELECT * FROM nope", tmp_path / "work")
    assert result.event == "failure" and "no such table: nope" in result.error


async def test_a_fifo_device_or_folder_as_the_database_is_named_as_such(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.db"
    os.mkfifo(fifo)
    for source in (fifo, Path("/dev/zero"), tmp_path):
        result = await _extract(source, "SELECT 1", tmp_path / "work")
        assert result.event == "failure" and "is not a regular file" in result.error, source
    missing = await _extract(tmp_path / "none.db", "SELECT 1", tmp_path / "work")
    assert "does not exist" in missing.error


async def test_pragmas_that_read_numbers_of_the_file_are_allowed(tmp_path: Path) -> None:
    db = _db(tmp_path / "shop.db")
    for query in ("PRAGMA user_version", "SELECT * FROM pragma_page_count()"):
        result = await _extract(db, query, tmp_path / "work")
        assert result.event == "success", (query, result.error)
    refused = await _extract(db, "PRAGMA user_version = 7", tmp_path / "work")
    assert refused.event == "failure"
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA user_version").fetchone() == (0,)
    con.close()
