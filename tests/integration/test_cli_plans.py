"""``ontoflow plan`` and ``ontoflow pipeline`` end to end: real processes, real sockets."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration._cli import Ran, run_ontoflow

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "configs" / "examples" / "pipelines"
COUNTING = Path(__file__).with_name("plan_capabilities.py")


@pytest.fixture
def here(tmp_path: Path) -> Path:
    """A folder with the example at the relative path its files expect, and its database."""
    target = tmp_path / "configs" / "examples" / "pipelines"
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns("*.db"))
    subprocess.run([sys.executable, str(target / "make_db.py")], check=True, capture_output=True)
    return tmp_path


@pytest.fixture
def ontoflow(here: Path):
    def run(*args: str, env: dict | None = None) -> Ran:
        return run_ontoflow(here, *args, env=env)

    return run


PIPELINE = "configs/examples/pipelines/sqlite_to_csv.yaml"


def test_sqlite_to_csv_pipeline_writes_the_right_file(ontoflow, here: Path) -> None:
    ran = ontoflow("pipeline", "run", PIPELINE, "--connections", "configs/examples/pipelines/connections.yaml", "--json")
    assert ran.code == 0, ran.stderr
    doc = ran.json()
    assert doc["status"] == "completed"
    assert [t["step_id"] for t in doc["trace"]] == ["extract-users", "keep-adults", "write-users-csv"]
    with (here / "out" / "pipelines" / "users.csv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    expected = [[str(i), f"user-{i:02d}", ["SE", "NO", "BR", "PT"][i % 4]] for i in range(1, 21) if 12 + (i * 7) % 40 >= 18]
    assert rows == [["id", "user_name", "country"], *expected]
    report = doc["context"]["ontoflow.plan.report"]
    assert report["write-users-csv"]["outputs"]["data.rows"] == len(expected)


def test_compile_is_deterministic_and_keeps_the_connection_name(ontoflow) -> None:
    first, second = ontoflow("pipeline", "compile", PIPELINE), ontoflow("pipeline", "compile", PIPELINE)
    assert first.code == 0 and first.stdout == second.stdout
    assert '"@default"' in first.stdout and "users.db" not in first.stdout


def test_malformed_pipeline_exits_2_with_every_error_and_writes_nothing(ontoflow, here: Path) -> None:
    bad = here / "bad.yaml"
    bad.write_text(
        "version: 1\nname: Bad_Name\nsteps:\n"
        "  - id: extract\n    component: sqlite.extractor\n    mode: pull\n    config: {query: 'SELECT 1', password: x}\n"
        "  - id: write\n    component: csv.writer\n    mode: write\n    needs: [nowhere]\n    config: {path: out/never.csv}\n"
    )
    check = ontoflow("pipeline", "check", "bad.yaml", "--json")
    assert check.code == 2
    errors = {e["path"] for e in check.json()["errors"]}
    assert errors == {"version", "oml_version", "name", "steps[0].mode", "steps[0].config.password", "steps[1].needs[0]"}
    ran = ontoflow("pipeline", "run", "bad.yaml")
    assert ran.code == 2 and "steps[1].needs[0]" in ran.stderr and ran.stdout == ""
    assert not (here / "out").exists()
    assert ontoflow("pipeline", "check", PIPELINE).code == 0


def test_an_undefined_connection_exits_2(ontoflow) -> None:
    ran = ontoflow("pipeline", "run", PIPELINE)
    assert ran.code == 2 and "@default" in ran.stderr


def test_plan_run_with_a_failing_optional_step(ontoflow, here: Path) -> None:
    ran = ontoflow("plan", "run", "configs/examples/pipelines/plan.yaml", "--json")
    assert ran.code == 0, ran.stderr
    assert (here / "out" / "pipelines" / "se_users.jsonl").exists()
    plan = here / "p.yaml"
    plan.write_text(
        "steps:\n"
        "  - {id: a, capability: sqlite.extractor, required: false, params: {data.query: 'SELECT 1', data.database: none.db}}\n"
        "  - {id: b, capability: csv.writer, depends_on: [a], required: false, params: {data.dataset: '${a.data.dataset}', data.path: x.csv}}\n"
    )
    doc = ontoflow("plan", "run", "p.yaml", "--json").json()
    assert doc["status"] == "completed"
    assert [(t["step_id"], t["event"]) for t in doc["trace"]] == [("a", "failure"), ("b", "skipped")]


@pytest.mark.parametrize(
    ("body", "bound"),
    [
        ("execution_mode: parallel\nmax_concurrency: 3\nsteps:\n" + "".join(f"  - {{id: s{i}, capability: t.count, params: {{t.limit: 3}}}}\n" for i in range(9)), 3),
        ("max_concurrency: 8\nsteps:\n  - {id: fan, capability: t.count, params: {t.limit: 2, t.items: [0, 1, 2, 3, 4, 5]}}\n", 2),
    ],
)
def test_max_concurrency_is_never_exceeded_in_a_worker_process(ontoflow, here: Path, body: str, bound: int) -> None:
    (here / "c.yaml").write_text("combine_mode: merge\n" + body)
    ran = ontoflow("plan", "run", "c.yaml", "--json", "--no-builtins", "-c", str(COUNTING), "--slots", "8")
    assert ran.code == 0, ran.stderr
    context = ran.json()["context"]
    peak = context["t.peak"]
    peaks = peak if isinstance(peak, list) else [peak]
    assert max(peaks) == bound  # reached (so the measure is real) and never exceeded
    if isinstance(peak, list):
        assert context["t.item"] == [0, 1, 2, 3, 4, 5]  # gathered in element order
