"""The deterministic synthesiser writes valid pipelines whatever the database names its tables
and whatever the file is called: a table name of 150 letters made step ids past 128 characters
(the guard refused its pipeline, twice, and handed it to a person), one of 300 accented letters
a file name past the 255 bytes a file system allows (the run failed), and a long file name of
the database a pipeline name past 256 characters."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ontoflow.actors.synthesis import SynthesisRequest, discover_sqlite, render_pipeline, synthesize
from ontoflow.actors.synthesis._guard import guard_pipeline
from tests.integration._cli import run_ontoflow

LONG, WIDE = "t" * 150, "é" * 300


def _database(path: Path, *tables: str) -> Path:
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=OFF")  # a journal's name is the database's and 8 bytes more
    with con:
        for table in tables:
            con.execute(f'CREATE TABLE "{table}" (id INTEGER)')
            con.execute(f'INSERT INTO "{table}" VALUES (1)')
    con.close()
    return path


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_long_table_names_give_a_valid_pipeline_with_distinct_short_enough_names(tmp_path: Path, monkeypatch, fmt) -> None:
    monkeypatch.chdir(tmp_path)
    _database(tmp_path / "shop.db", LONG, LONG + "x", WIDE, WIDE + "x")
    request = SynthesisRequest(source="./shop.db", format=fmt)
    document = synthesize(request, discover_sqlite(tmp_path / "shop.db"))
    assert guard_pipeline(document, request) == []
    files = [Path(s["config"]["path"]).name for s in document["steps"] if s["mode"] == "write"]
    assert len(set(files)) == 4 and all(len(f.encode()) <= 255 for f in files), files


def test_a_long_database_file_name_gives_a_valid_pipeline_name(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    name = "s" * 250 + ".db"  # 253 bytes: "-to-jsonl" made the pipeline's name 259 characters
    _database(tmp_path / name, "users")
    request = SynthesisRequest(source=f"./{name}", format="jsonl")
    document = synthesize(request, discover_sqlite(tmp_path / name))
    assert guard_pipeline(document, request) == []


def test_a_table_of_300_accented_letters_is_exported(tmp_path: Path) -> None:
    _database(tmp_path / "shop.db", WIDE)
    request = SynthesisRequest(source="./shop.db", destination="./out")
    (tmp_path / "p.yaml").write_text(render_pipeline(synthesize(request, discover_sqlite(tmp_path / "shop.db"))),
                                     encoding="utf-8")
    ran = run_ontoflow(tmp_path, "pipeline", "run", "p.yaml")
    assert ran.code == 0, ran.stderr
    [written] = (tmp_path / "out").iterdir()
    assert written.read_text(encoding="utf-8").splitlines() == ["id", "1"]
