"""The writers against a hostile folder or dataset: no write through a planted link, a BLOB
written as data, quotes and newlines kept, an existing file replaced whole (real files)."""

from __future__ import annotations

import base64
import csv
import os
import sqlite3
from pathlib import Path

import pytest

from ontoflow.actors.capabilities.data import CsvWriter, JsonlWriter, SqliteExtractor
from ontoflow.protocols import Invoke, StepContext, SystemMetadata

pytestmark = pytest.mark.anyio


async def _invoke(capability, inputs: dict, step: str):
    ctx = StepContext(system=SystemMetadata(run_id="r1", step_id=step))
    return await capability.invoke(
        Invoke(run_id="r1", step_id=step, attempt=1, capability=capability.metadata.id, inputs=inputs, context=ctx))


async def _dataset(tmp_path: Path, rows: list[tuple]) -> dict:
    db = tmp_path / "src.db"
    con = sqlite3.connect(db)
    with con:
        con.execute("CREATE TABLE t (id INTEGER, v)")
        con.executemany("INSERT INTO t VALUES (?, ?)", rows)
    con.close()
    out = await _invoke(SqliteExtractor(), {"data.query": "SELECT * FROM t ORDER BY id", "data.database": str(db),
                                             "data.work_dir": str(tmp_path / "work")}, "x")
    assert out.event == "success", out.error
    return out.outputs["data.dataset"]


@pytest.mark.parametrize("writer", [CsvWriter, JsonlWriter])
async def test_a_link_planted_at_the_old_temporary_name_is_not_written_through(tmp_path: Path, writer) -> None:
    ref = await _dataset(tmp_path, [(1, "row")])
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    folder = tmp_path / "shared"
    folder.mkdir()
    # The name the writer used to pick: the worker's pid, known to anyone on the host.
    (folder / f".out.csv.{os.getpid()}.part").symlink_to(victim)
    result = await _invoke(writer(), {"data.dataset": ref, "data.path": str(folder / "out.csv")}, "w")
    assert result.event == "success", result.error
    assert victim.read_text() == "precious\n"
    assert not (folder / "out.csv").is_symlink() and "row" in (folder / "out.csv").read_text()


async def test_blobs_quotes_newlines_and_formulas_are_written_as_data(tmp_path: Path) -> None:
    blob = bytes(range(256))
    values = [(1, blob), (2, 'say "hi",\nbye'), (3, "=cmd|' /C calc'!A0"), (4, None)]
    ref = await _dataset(tmp_path, values)
    target = tmp_path / "out.csv"
    result = await _invoke(CsvWriter(), {"data.dataset": ref, "data.path": str(target)}, "w")
    assert result.event == "success", result.error
    with target.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["id", "v"]
    assert base64.b64decode(rows[1][1]) == blob
    assert rows[2][1] == 'say "hi",\nbye' and rows[3][1] == "=cmd|' /C calc'!A0" and rows[4][1] == ""


async def test_an_existing_file_link_or_fifo_at_the_target_is_replaced_not_followed(tmp_path: Path) -> None:
    ref = await _dataset(tmp_path, [(1, "new")])
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    link, fifo = tmp_path / "link.csv", tmp_path / "fifo.csv"
    link.symlink_to(victim)
    os.mkfifo(fifo)
    for target in (link, fifo):
        result = await _invoke(CsvWriter(), {"data.dataset": ref, "data.path": str(target)}, "w")
        assert result.event == "success", result.error
        assert target.is_file() and not target.is_symlink() and "new" in target.read_text()
    assert victim.read_text() == "precious\n"
    folder = tmp_path / "a-folder.csv"
    folder.mkdir()
    refused = await _invoke(CsvWriter(), {"data.dataset": ref, "data.path": str(folder)}, "w")
    assert refused.event == "failure" and "names a folder" in refused.error
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temporary left


async def _invoke_in(run_id: str, capability, inputs: dict, step: str):
    ctx = StepContext(system=SystemMetadata(run_id=run_id, step_id=step))
    return await capability.invoke(
        Invoke(run_id=run_id, step_id=step, attempt=1, capability=capability.metadata.id, inputs=inputs, context=ctx))


@pytest.mark.parametrize("reader", [CsvWriter, JsonlWriter, "transform"])
async def test_a_dataset_of_another_run_is_not_read(tmp_path: Path, reader) -> None:
    # A plan may write data.dataset by hand: on a daemon, naming another client's run spool.
    from ontoflow.actors.capabilities.data import TableTransform

    theirs = await _dataset(tmp_path, [(1, "their secret row")])  # run r1's spool
    assert theirs["path"].endswith("/r1/x.rows")
    stolen = tmp_path / "stolen.csv"
    capability = TableTransform() if reader == "transform" else reader()
    inputs = {"data.dataset": theirs, "data.work_dir": str(tmp_path / "work")} if reader == "transform" \
        else {"data.dataset": theirs, "data.path": str(stolen)}
    result = await _invoke_in("r2", capability, inputs, "w")
    assert result.event == "failure" and "no spool file of this run" in result.error
    assert theirs["path"] not in result.error and not stolen.exists()
    fifo = tmp_path / "work" / "r2" / "f.rows"
    fifo.parent.mkdir(parents=True)
    os.mkfifo(fifo)  # a FIFO in the run's own folder is refused, not waited on
    result = await _invoke_in("r2", capability, {**inputs, "data.dataset": {**theirs, "path": str(fifo)}}, "w")
    assert result.event == "failure" and "does not exist" in result.error


@pytest.mark.parametrize("delimiter", ['"', "\n", "\r"])
async def test_a_delimiter_that_would_not_read_back_is_refused(tmp_path: Path, delimiter: str) -> None:
    ref = await _dataset(tmp_path, [(1, 'a\nb"c')])
    target = tmp_path / "out.csv"
    result = await _invoke(CsvWriter(), {"data.dataset": ref, "data.path": str(target), "data.delimiter": delimiter}, "w")
    assert result.event == "failure" and "data.delimiter may not be" in result.error and not target.exists()


@pytest.mark.parametrize("delimiter", [";", "\t", "|", "\u00a7"])
async def test_other_delimiters_read_back(tmp_path: Path, delimiter: str) -> None:
    ref = await _dataset(tmp_path, [(1, f'a{delimiter}\nb"c')])
    target = tmp_path / "out.csv"
    result = await _invoke(CsvWriter(), {"data.dataset": ref, "data.path": str(target), "data.delimiter": delimiter}, "w")
    assert result.event == "success", result.error
    with target.open(newline="", encoding="utf-8") as fh:
        assert list(csv.reader(fh, delimiter=delimiter)) == [["id", "v"], ["1", f'a{delimiter}\nb"c']]


async def test_jsonl_refuses_columns_of_one_name_rather_than_drop_one(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    con = sqlite3.connect(db)
    with con:
        con.execute("CREATE TABLE a (id INTEGER, name TEXT)")
        con.execute("CREATE TABLE b (id INTEGER, name TEXT)")
        con.execute("INSERT INTO a VALUES (1, 'left')")
        con.execute("INSERT INTO b VALUES (1, 'right')")
    con.close()
    out = await _invoke(SqliteExtractor(), {"data.query": "SELECT * FROM a JOIN b USING (id)", "data.database": str(db),
                                             "data.work_dir": str(tmp_path / "work")}, "x")
    assert out.outputs["data.dataset"]["columns"] == ["id", "name", "name"]
    target = tmp_path / "out.jsonl"
    result = await _invoke(JsonlWriter(), {"data.dataset": out.outputs["data.dataset"], "data.path": str(target)}, "w")
    assert result.event == "failure" and "columns 2 and 3" in result.error and not target.exists()


async def test_transform_names_an_unknown_column_by_its_place_never_by_the_name_given(tmp_path: Path) -> None:
    """``data.select`` and ``data.rename`` are inputs: their values never reach an error (a name
    of a megabyte made an error of that size, and a name may be what a person typed)."""
    from ontoflow.actors.capabilities.data import TableTransform

    ref = await _dataset(tmp_path, [(1, "a")])
    secret_like = "nope-" + "x" * 100_000
    work = str(tmp_path / "work")
    bad_select = await _invoke(TableTransform(), {"data.dataset": ref, "data.select": ["id", secret_like],
                                                  "data.work_dir": work}, "t1")
    assert bad_select.event == "failure" and "data.select[1]" in bad_select.error
    bad_rename = await _invoke(TableTransform(), {"data.dataset": ref, "data.select": ["id"],
                                                  "data.rename": {secret_like: "w"}, "data.work_dir": work}, "t2")
    assert bad_rename.event == "failure" and "key #1" in bad_rename.error
    for result in (bad_select, bad_rename):
        assert "nope-" not in result.error and len(result.error) < 500
