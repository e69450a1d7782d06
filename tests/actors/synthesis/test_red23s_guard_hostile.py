"""The pipeline guard is a pure function over untrusted documents (a model's answer): it
answers with problems at their paths, whatever the document holds; it never raises."""

from __future__ import annotations

from typing import Any

import pytest

from ontoflow.actors.synthesis._guard import guard_pipeline


def _nested(levels: int) -> Any:
    value: Any = "v"
    for _ in range(levels):
        value = {"a": value}
    return value


def _pipeline(config: dict[str, Any]) -> dict[str, Any]:
    return {"oml_version": "0.1.0", "name": "deep", "steps": [
        {"id": "extract", "component": "sqlite.extractor", "mode": "read", "config": config}]}


@pytest.mark.parametrize("levels", [500, 5_000])
def test_a_config_nested_past_the_stack_is_a_problem_at_its_path_not_a_recursion_error(levels: int) -> None:
    problems = guard_pipeline(_pipeline({"query": "SELECT 1", "database": "d.db", "opts": _nested(levels)}))
    assert [(p.path, p.message) for p in problems] == [("steps[0].config", "nested deeper than 100 levels")]


def test_a_config_as_deep_as_a_plan_allows_is_judged_as_usual() -> None:
    problems = guard_pipeline(_pipeline({"query": "SELECT 1", "database": "d.db", "opts": _nested(99)}))
    assert [p.path for p in problems] == ["steps[0].config.opts"]  # not a setting of the component


def test_references_deep_in_a_config_are_found_at_their_paths() -> None:
    config = {"query": "SELECT 1", "database": "d.db", "batch_rows": [{"x": "${a.b}"}, "${c.d}"]}
    assert [p.path for p in guard_pipeline(_pipeline(config))] == ["steps[0].config.batch_rows[0].x",
                                                                   "steps[0].config.batch_rows[1]"]


def test_a_path_longer_than_any_file_system_opens_is_no_usable_path() -> None:
    # Resolving it (os.path.realpath) takes time quadratic in its parts: a model's 600 KB path
    # held the worker's loop for minutes; no system opens a path past 4,096 bytes anyway.
    from ontoflow.actors.synthesis import SynthesisRequest

    document = _pipeline({"query": "SELECT 1", "database": "./shop.db"})
    document["steps"].append({"id": "write", "component": "csv.writer", "mode": "write", "needs": ["extract"],
                              "config": {"path": "a/" * 100_000 + "x.csv"}})
    problems = guard_pipeline(document, SynthesisRequest(source="./shop.db"))
    assert [(p.path, p.message) for p in problems] == [("steps[1].config.path", "is not a usable file path")]
