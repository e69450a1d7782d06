"""Two write steps never write one file: a pipeline that would is refused at its path, naming
the other step (never the path), as a case- and normalisation-insensitive file system sees the
names; the deterministic synthesiser gives such tables distinct files (real CLI, real SQLite)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ontoflow.actors.synthesis import SynthesisRequest, discover_sqlite, synthesize
from ontoflow.actors.synthesis._guard import guard_pipeline
from tests.integration._cli import run_ontoflow

NFD = "cafe\u0301"  # café as macOS writes it in a file name


def _pipeline(paths: list[str]) -> str:
    steps = ['  - {id: extract, component: sqlite.extractor, mode: read, config: {query: "SELECT 1 AS a", database: d.db}}']
    steps += [f'  - {{id: write-{i}, component: csv.writer, mode: write, needs: [extract], config: {{path: "{p}"}}}}'
              for i, p in enumerate(paths)]
    return 'oml_version: "0.1.0"\nname: two-writers\nsteps:\n' + "\n".join(steps) + "\n"


@pytest.mark.parametrize("paths", [["out/x.csv", "out/./x.csv"], ["out/Café.csv", "out/CAFÉ.csv"],
                                   ["out/café.csv", f"out/{NFD}.csv"]])
def test_a_pipeline_writing_one_file_twice_is_refused_before_it_runs(tmp_path: Path, paths: list[str]) -> None:
    sqlite3.connect(tmp_path / "d.db").close()
    (tmp_path / "p.yaml").write_text(_pipeline(paths), encoding="utf-8")
    for command in ("check", "run"):
        ran = run_ontoflow(tmp_path, "pipeline", command, "p.yaml")
        assert ran.code == 2, ran.stderr
        assert "steps[2].config.path: step write-0 writes the same file" in ran.stderr
        assert paths[1] not in ran.stderr
    assert not (tmp_path / "out").exists()


def test_tables_whose_names_differ_in_case_or_accents_get_distinct_files(tmp_path: Path) -> None:
    db = tmp_path / "shop.db"
    con = sqlite3.connect(db)
    with con:
        for name in ("café", "CAFÉ", NFD):  # three tables to SQLite (it folds ASCII only)
            con.execute(f'CREATE TABLE "{name}" (id INTEGER)')
    con.close()
    request = SynthesisRequest(source=str(db), destination=str(tmp_path / "out"))
    document = synthesize(request, discover_sqlite(db))
    paths = [s["config"]["path"] for s in document["steps"] if s["component"] == "csv.writer"]
    assert len({p.casefold() for p in paths}) == 3, paths
    assert guard_pipeline(document, request) == []


def test_a_pipeline_writing_over_its_source_database_is_refused(tmp_path: Path) -> None:
    con = sqlite3.connect(tmp_path / "d.db")
    with con:
        con.execute("CREATE TABLE t (a INTEGER)")
    con.close()
    before = (tmp_path / "d.db").read_bytes()
    (tmp_path / "p.yaml").write_text(_pipeline(["./d.db"]), encoding="utf-8")
    ran = run_ontoflow(tmp_path, "pipeline", "run", "p.yaml")
    assert ran.code == 2, ran.stderr
    assert "steps[1].config.path: overwrites the database step extract reads" in ran.stderr
    assert (tmp_path / "d.db").read_bytes() == before
