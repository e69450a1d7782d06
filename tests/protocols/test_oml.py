"""The OML v0.1.0 schema guard: every rule, every error at once, each with its path."""

from __future__ import annotations

import pytest

from ontoflow.protocols import ManifestError, check_oml, pipeline_from_data

COMPONENTS = {"sqlite.extractor", "csv.writer"}


def _valid() -> dict:
    return {
        "oml_version": "0.1.0",
        "name": "sqlite-to-csv",
        "steps": [
            {"id": "extract-users", "component": "sqlite.extractor", "mode": "read", "config": {"query": "SELECT 1", "connection": "@default"}},
            {"id": "write-csv", "component": "csv.writer", "mode": "write", "needs": ["extract-users"], "config": {"path": "u.csv"}},
        ],
    }


def _paths(data) -> dict[str, str]:
    return {p.path: p.message for p in check_oml(data, components=COMPONENTS)}


def test_a_valid_pipeline_has_no_problem() -> None:
    assert check_oml(_valid(), components=COMPONENTS) == []
    assert pipeline_from_data(_valid()).steps[1].needs == ["extract-users"]


def test_required_keys() -> None:
    problems = _paths({})
    assert set(problems) == {"oml_version", "name", "steps"}
    assert _paths({**_valid(), "oml_version": "0.2"})["oml_version"] == 'must be "0.1.0"'
    assert "kebab-case" in _paths({**_valid(), "name": "My_Pipeline"})["name"]
    assert "non-empty" in _paths({**_valid(), "steps": []})["steps"]


def test_legacy_keys_are_refused_with_a_hint_each() -> None:
    data = {**_valid(), "version": 1, "connectors": {}, "tasks": [], "outputs": []}
    problems = _paths(data)
    assert "oml_version" in problems["version"]
    assert "steps[].component" in problems["connectors"]
    assert "replaced by steps" in problems["tasks"]
    assert "config" in problems["outputs"]


def test_step_rules_all_reported_at_once() -> None:
    data = _valid()
    data["steps"] = [
        {"id": "Extract_Users", "component": "nope.extractor", "mode": "copy", "config": [], "extra": 1},
        {"id": "write-csv", "component": "csv.writer", "mode": "write", "needs": ["ghost", "write-csv"]},
        {"id": "write-csv", "component": "csv.writer", "mode": "write"},
        {"component": "csv.writer"},
    ]
    problems = _paths(data)
    assert "kebab-case" in problems["steps[0].id"]
    assert "no capability 'nope.extractor'" in problems["steps[0].component"]
    assert problems["steps[0].mode"] == "must be one of read, write, transform"
    assert "must be a map" in problems["steps[0].config"]
    assert "unknown key" in problems["steps[0].extra"]
    assert "does not exist" in problems["steps[1].needs[0]"]
    assert "cannot need itself" in problems["steps[1].needs[1]"]
    assert "duplicate of steps[1].id" in problems["steps[2].id"]
    assert problems["steps[3].id"] == "required key is missing"
    assert problems["steps[3].mode"] == "required key is missing"


def test_needs_cycle_is_reported() -> None:
    data = _valid()
    data["steps"][0]["needs"] = ["write-csv"]
    problems = _paths(data)
    assert any("cycle" in m for m in problems.values())


def test_secrets_are_refused_and_never_echoed() -> None:
    data = _valid()
    data["steps"][0]["config"] = {
        "query": "SELECT 1",
        "connection": {"host": "db", "password": "hunter2"},
        "password": "hunter2",
        "options": {"api_key": "sk-123"},
        "url": "postgres://bob:hunter2@db/x",
    }
    problems = check_oml(data, components=COMPONENTS)
    paths = {p.path for p in problems}
    assert {"steps[0].config.connection", "steps[0].config.password", "steps[0].config.options.api_key", "steps[0].config.url"} <= paths
    assert all("hunter2" not in p.message and "sk-123" not in p.message for p in problems)


def test_pipeline_from_data_raises_every_problem() -> None:
    with pytest.raises(ManifestError) as info:
        pipeline_from_data({"version": "1", "name": "x"}, components=COMPONENTS)
    assert {p.path for p in info.value.problems} == {"version", "oml_version", "steps"}


def test_not_a_map() -> None:
    assert check_oml([1])[0].path == ""


def test_a_pipeline_past_a_plans_bounds_is_refused_by_the_check() -> None:
    # It compiles to a plan of as many steps: the plan's bounds hold at the check already, so a
    # pipeline that passes ``check_oml`` compiles.
    def step(i: int) -> dict:
        return {"id": f"s-{i}", "component": "csv.writer", "mode": "write", "config": {"path": f"{i}.csv"},
                **({"needs": [f"s-{i - 1}"]} if i else {})}

    assert check_oml({**_valid(), "steps": [step(i) for i in range(500)]}, components=COMPONENTS) == []
    problems = _paths({**_valid(), "steps": [step(i) for i in range(501)]})
    assert problems == {"steps": "501 steps; a plan has at most 500"}
