"""A config key may name a setting by its short name (``path``) or its input key
(``data.path``): both are one setting, so every rule about it holds under either spelling.

Before, ``data.path`` slipped past the checks written for ``path``: a model's pipeline wrote
outside the destination or over the source database, two writers wrote one file, and a step
giving ``database`` and ``data.database`` read whichever came last (not the one checked)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ontoflow.actors.synthesis import SynthesisRequest
from ontoflow.actors.synthesis._guard import guard_pipeline
from tests.integration._cli import run_ontoflow


def _pipeline(read: dict, *writes: dict) -> dict:
    steps = [{"id": "extract", "component": "sqlite.extractor", "mode": "read", "config": read}]
    steps += [{"id": f"write-{i}", "component": "csv.writer", "mode": "write", "needs": ["extract"], "config": w}
              for i, w in enumerate(writes)]
    return {"oml_version": "0.1.0", "name": "aliases", "steps": steps}


READ = {"query": "SELECT 1 AS a", "database": "./shop.db"}
REQUEST = SynthesisRequest(source="./shop.db", destination="./out")


def _paths(document: dict) -> list[str]:
    return [p.path for p in guard_pipeline(document, REQUEST)]


@pytest.mark.parametrize("key", ["path", "data.path"])
def test_a_writer_path_outside_the_destination_is_refused_under_either_spelling(key: str) -> None:
    assert _paths(_pipeline(READ, {key: "/etc/cron.d/x.csv"})) == [f"steps[1].config.{key}"]


@pytest.mark.parametrize("key", ["path", "data.path"])
def test_a_writer_over_the_source_is_refused_under_either_spelling(key: str) -> None:
    assert _paths(_pipeline(READ, {key: "./shop.db"})) == [f"steps[1].config.{key}"]


def test_two_spellings_of_one_setting_in_one_step_are_refused_at_the_second() -> None:
    read = {"query": "SELECT 1 AS a", "database": "./shop.db", "data.database": "/etc/other.db"}
    problems = guard_pipeline(_pipeline(read, {"path": "./out/a.csv"}), REQUEST)
    assert [p.path for p in problems] == ["steps[0].config.data.database"]
    assert "database" in problems[0].message and "/etc/other.db" not in problems[0].message


def test_a_connection_spelled_as_its_input_key_is_still_checked_against_the_source() -> None:
    read = {"query": "SELECT 1 AS a", "database": "./shop.db", "data.connection": "./other.db"}
    assert _paths(_pipeline(read, {"path": "./out/a.csv"})) == ["steps[0].config.data.connection"]


def test_two_writers_of_one_file_under_two_spellings_are_refused_by_pipeline_check(tmp_path: Path) -> None:
    sqlite3.connect(tmp_path / "d.db").close()
    (tmp_path / "p.yaml").write_text(
        'oml_version: "0.1.0"\nname: two-writers\nsteps:\n'
        '  - {id: extract, component: sqlite.extractor, mode: read, config: {query: "SELECT 1 AS a", database: d.db}}\n'
        '  - {id: write-0, component: csv.writer, mode: write, needs: [extract], config: {path: out/x.csv}}\n'
        '  - {id: write-1, component: csv.writer, mode: write, needs: [extract], config: {data.path: out/x.csv}}\n'
        '  - {id: write-2, component: csv.writer, mode: write, needs: [extract], config: {data.path: ./d.db}}\n',
        encoding="utf-8")
    ran = run_ontoflow(tmp_path, "pipeline", "check", "p.yaml")
    assert ran.code == 2, ran.stderr
    assert "steps[2].config.data.path: step write-0 writes the same file" in ran.stderr
    assert "steps[3].config.data.path: overwrites the database step extract reads" in ran.stderr
