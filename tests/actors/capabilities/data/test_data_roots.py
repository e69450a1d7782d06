"""``ONTOFLOW_DATA_ROOTS`` on a worker bounds where its data steps read and write: a pipeline
naming a file outside (``..``, an absolute path, a link in the folder leading out) fails at
that step, naming the setting, never the path, and nothing is written outside (real CLI
processes, real SQLite)."""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
from pathlib import Path

import pytest

from tests.integration._cli import run_ontoflow


def _pipeline(database: str, path: str, work_dir: str | None = None) -> str:
    extra = f', work_dir: "{work_dir}"' if work_dir else ""
    return ('oml_version: "0.1.0"\nname: roots\nsteps:\n'
            f'  - {{id: extract, component: sqlite.extractor, mode: read, config: {{query: "SELECT * FROM t", '
            f'database: "{database}"{extra}}}}}\n'
            f'  - {{id: write, component: csv.writer, mode: write, needs: [extract], config: {{path: "{path}"}}}}\n')


@pytest.fixture
def place(tmp_path: Path) -> Path:
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    for folder in (allowed, outside):
        con = sqlite3.connect(folder / "shop.db")
        with con:
            con.execute("CREATE TABLE t (a INTEGER)")
            con.execute("INSERT INTO t VALUES (1)")
        con.close()
    (allowed / "out").mkdir()
    (allowed / "escape").symlink_to(outside)
    return tmp_path


def _run(place: Path, document: str) -> tuple[int, dict, str]:
    (place / "allowed" / "p.yaml").write_text(document, encoding="utf-8")
    # The worker's own temporary folder (a spool may go there), apart from "outside"; short, as
    # its socket's path must be.
    with tempfile.TemporaryDirectory(prefix="odr-") as tmp:
        env = {**os.environ, "ONTOFLOW_DATA_ROOTS": str(place / "allowed"), "TMPDIR": tmp}
        ran = run_ontoflow(place / "allowed", "pipeline", "run", "p.yaml", "--json", env=env)
    return ran.code, json.loads(ran.stdout) if ran.stdout.strip() else {}, ran.stdout + ran.stderr


def test_inside_the_roots_a_pipeline_runs(place: Path) -> None:
    code, doc, text = _run(place, _pipeline("shop.db", "out/t.csv", work_dir="spool"))
    assert code == 0, text
    assert (place / "allowed" / "out" / "t.csv").read_text().splitlines() == ["a", "1"]


@pytest.mark.parametrize(("document", "step", "setting"), [
    (_pipeline("shop.db", "../outside/t.csv"), "write", "data.path"),
    (_pipeline("shop.db", "escape/t.csv"), "write", "data.path"),
    (_pipeline("{outside}/shop.db", "out/t.csv"), "extract", "data.database/data.connection"),
    (_pipeline("escape/shop.db", "out/t.csv"), "extract", "data.database/data.connection"),
    (_pipeline("shop.db", "out/t.csv", work_dir="{outside}/spool"), "extract", "data.work_dir"),
])
def test_outside_the_roots_the_step_fails_and_writes_nothing(place: Path, document: str, step: str, setting: str) -> None:
    outside = place / "outside"
    code, doc, text = _run(place, document.replace("{outside}", str(outside)))
    assert code != 0 and "context" in doc, text
    error = doc["context"]["ontoflow.plan.report"][step]["error"]
    assert f"{setting} is outside the folders this worker's data steps may use (ONTOFLOW_DATA_ROOTS)" in error
    assert str(outside) not in text and "escape" not in error
    assert sorted(p.name for p in outside.iterdir()) == ["shop.db"]
    assert not (place / "allowed" / "out" / "t.csv").exists()
