"""``ontoflow plan run`` resolves ``@name`` connections as ``pipeline run`` does: the plan that
``pipeline compile`` prints runs as it is (real processes)."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration._cli import run_ontoflow

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "configs" / "examples" / "pipelines"
PIPELINE = "configs/examples/pipelines/sqlite_to_csv.yaml"
CONNECTIONS = "configs/examples/pipelines/connections.yaml"


@pytest.fixture
def here(tmp_path: Path) -> Path:
    target = tmp_path / "configs" / "examples" / "pipelines"
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns("*.db"))
    subprocess.run([sys.executable, str(target / "make_db.py")], check=True, capture_output=True)
    return tmp_path


def _rows(here: Path) -> list[list[str]]:
    with (here / "out" / "pipelines" / "users.csv").open(newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def test_the_compiled_plan_of_a_pipeline_runs_with_its_connections(here: Path) -> None:
    compiled = run_ontoflow(here, "pipeline", "compile", PIPELINE)
    assert compiled.code == 0 and '"@default"' in compiled.stdout
    (here / "plan.json").write_text(compiled.stdout)

    ran = run_ontoflow(here, "pipeline", "run", PIPELINE, "--connections", CONNECTIONS, "--json")
    assert ran.code == 0, ran.stderr
    expected = _rows(here)
    shutil.rmtree(here / "out")

    # Before: "data.connection ... was not resolved", exit 1, and plan run had no --connections.
    ran = run_ontoflow(here, "plan", "run", "plan.json", "--connections", CONNECTIONS, "--json")
    assert ran.code == 0, ran.stderr
    assert ran.json()["status"] == "completed" and _rows(here) == expected
    assert "users.db" not in ran.stdout + ran.stderr  # the resolved value is never printed
    shutil.rmtree(here / "out")

    env = {**os.environ, "ONTOFLOW_CONNECTION_DEFAULT": '{"database": "configs/examples/pipelines/users.db"}'}
    ran = run_ontoflow(here, "plan", "run", "plan.json", "--json", env=env)
    assert ran.code == 0, ran.stderr
    assert _rows(here) == expected


def test_a_connection_defined_nowhere_exits_2_and_runs_nothing(here: Path) -> None:
    (here / "plan.json").write_text(run_ontoflow(here, "pipeline", "compile", PIPELINE).stdout)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_CONNECTION_")}
    ran = run_ontoflow(here, "plan", "run", "plan.json", env=env)
    assert ran.code == 2 and "@default" in ran.stderr and ran.stdout == ""
    assert not (here / "out").exists()
