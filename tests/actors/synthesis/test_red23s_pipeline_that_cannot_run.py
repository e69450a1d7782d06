"""The guard before COMPILE passes only a pipeline that can run and does what was asked: a
pipeline of one extractor (it writes nothing: "export to CSV" made no file and said
``completed``), a writer that needs no step (it has no rows to write) or that is given no
``path`` passed the guard and compiled, and failed, or did nothing, when run."""

from __future__ import annotations

from typing import Any

from ontoflow.actors.synthesis import SynthesisRequest
from ontoflow.actors.synthesis._guard import guard_pipeline

REQUEST = SynthesisRequest(source="./shop.db")
EXTRACT = {"id": "extract-users", "component": "sqlite.extractor", "mode": "read",
           "config": {"query": "SELECT * FROM users", "database": "./shop.db"}}


def _pipeline(*steps: dict[str, Any]) -> dict[str, Any]:
    return {"oml_version": "0.1.0", "name": "shop", "steps": list(steps)}


def _writer(**fields: Any) -> dict[str, Any]:
    return {"id": "write-users", "component": "csv.writer", "mode": "write", "needs": ["extract-users"],
            "config": {"path": "./out/users.csv"}, **fields}


def test_a_pipeline_that_writes_nothing_is_refused_naming_the_writer_to_add() -> None:
    problems = guard_pipeline(_pipeline(EXTRACT), REQUEST)
    assert [p.path for p in problems] == ["steps"]
    assert "csv.writer" in problems[0].message


def test_a_writer_that_needs_no_step_is_refused_at_its_needs() -> None:
    problems = guard_pipeline(_pipeline(EXTRACT, _writer(needs=[])), REQUEST)
    assert [p.path for p in problems] == ["steps[1].needs"]
    assert "data.dataset" in problems[0].message


def test_a_writer_given_no_path_is_refused_at_its_config() -> None:
    problems = guard_pipeline(_pipeline(EXTRACT, _writer(config={})), REQUEST)
    assert [p.path for p in problems] == ["steps[1].config"]
    assert "path" in problems[0].message


def test_a_pipeline_that_can_run_passes() -> None:
    assert guard_pipeline(_pipeline(EXTRACT, _writer()), REQUEST) == []
    assert guard_pipeline(_pipeline(EXTRACT, _writer(config={"data.path": "./out/users.csv"})), REQUEST) == []
