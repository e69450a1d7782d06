"""VALIDATE_OML (``actors/synthesis/_guard.py``): what the guard refuses, each with its path, so
the one guided regeneration can fix it; and, through the chat state machine against a scripted
OpenAI-compatible server, that such an answer is regenerated instead of failing at compile."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ontoflow import arun_manifest, run_manifest
from ontoflow.actors.synthesis import CHAT_CAPABILITIES, CHAT_FSM, SynthesisRequest
from ontoflow.actors.synthesis._guard import guard_pipeline
from tests.support.fake_openai import open_fake_openai, tool_answer

REQUEST = "pipelines.request"


def _pipeline(extract: dict[str, Any] | None = None, write: dict[str, Any] | None = None) -> dict[str, Any]:
    first = {"id": "extract-users", "component": "sqlite.extractor", "mode": "read",
             "config": {"query": "SELECT * FROM users", "database": "./shop.db"}}
    second = {"id": "write-users", "component": "csv.writer", "mode": "write", "needs": ["extract-users"],
              "config": {"path": "./out/users.csv"}}
    return {"oml_version": "0.1.0", "name": "shop-to-csv",
            "steps": [{**first, **(extract or {})}, {**second, **(write or {})}]}


def _paths(document: Any, request: SynthesisRequest | None = None) -> list[str]:
    return [p.path for p in guard_pipeline(document, request)]


def test_a_valid_pipeline_passes() -> None:
    assert _paths(_pipeline(), SynthesisRequest(source="./shop.db")) == []


@pytest.mark.parametrize(("step", "path"), [
    ({"component": "mysql.extractor"}, "steps[0].component"),  # the seed's own example: not a component here
    ({"component": "fs.directory_watcher"}, "steps[0].component"),  # a capability, but no pipeline component
    ({"mode": "write"}, "steps[0].mode"),  # sqlite.extractor works in mode read only
    ({"config": {"query": "SELECT 1", "database": "./shop.db", "format": "csv"}}, "steps[0].config.format"),
    ({"config": {"query": "SELECT '${x}'", "database": "./shop.db"}}, "steps[0].config.query"),  # named as in OML
])
def test_what_compile_would_refuse_is_a_guard_error_with_its_path(step: dict[str, Any], path: str) -> None:
    assert _paths(_pipeline(extract=step)) == [path]


@pytest.mark.parametrize(("extract", "write", "path"), [
    ({"config": {"query": "SELECT 1", "database": "/srv/other.db"}}, None, "steps[0].config.database"),
    ({"config": {"query": "SELECT 1", "connection": "@other"}}, None, "steps[0].config.connection"),
    (None, {"config": {"path": "/home/someone/.bashrc"}}, "steps[1].config.path"),
    (None, {"config": {"path": "../../escape.csv"}}, "steps[1].config.path"),
    (None, {"config": {"path": "~/.profile"}}, "steps[1].config.path"),
    (None, {"config": {"path": "./shop.db"}}, "steps[1].config.path"),  # would overwrite the source
    ({"config": {"query": "SELECT 1", "database": "./shop.db", "work_dir": "/etc/spool"}}, None,
     "steps[0].config.work_dir"),
    (None, {"component": "jsonl.writer", "config": {"path": "./out/users.jsonl"}}, "steps[1].component"),
    (None, {"config": {"path": "./out/u.csv", "dataset": {"format": "ontoflow.rows.v1", "path": "/tmp/x.rows"}}},
     "steps[1].config.dataset"),
    (None, {"config": {"path": "${extract-users.data.dataset}"}}, "steps[1].config.path"),  # a reference, not a path
    (None, {"config": {"path": "./out/\x00.csv"}}, "steps[1].config.path"),  # no file has a NUL: not a crash
    ({"config": {"query": "SELECT 1", "database": "./shop.db\x00"}}, None, "steps[0].config.database"),
])
def test_a_pipeline_that_does_not_do_what_was_asked_is_refused(
        extract: dict[str, Any] | None, write: dict[str, Any] | None, path: str) -> None:
    document = _pipeline(extract, write)
    problems = guard_pipeline(document, SynthesisRequest(source="./shop.db", format="csv"))
    assert [p.path for p in problems] == [path]
    shown = " ".join(p.message for p in problems)
    for value in ("/srv/other.db", "@other", ".bashrc", "escape.csv", ".profile", "/etc/spool"):
        assert value not in shown  # what the model wrote is not echoed


def test_a_connection_source_must_be_read_through_that_connection() -> None:
    request = SynthesisRequest(source="@shop")
    by_connection = _pipeline({"config": {"query": "SELECT 1", "connection": "@shop"}})
    assert _paths(by_connection, request) == []
    assert _paths(_pipeline(), request) == ["steps[0].config.database"]


def test_an_absolute_destination_admits_paths_under_it_only(tmp_path: Path) -> None:
    request = SynthesisRequest(source="./shop.db", destination=str(tmp_path / "out"))
    inside = _pipeline(write={"config": {"path": str(tmp_path / "out" / "users.csv")}})
    beside = _pipeline(write={"config": {"path": str(tmp_path / "out-evil" / "users.csv")}})
    assert _paths(inside, request) == []
    assert _paths(beside, request) == ["steps[1].config.path"]


def test_paths_are_compared_where_they_point_from_the_working_folder(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    absolute = _pipeline({"config": {"query": "SELECT 1", "database": str(tmp_path / "shop.db")}},
                         {"config": {"path": str(tmp_path / "out" / "users.csv")}})
    assert _paths(absolute, SynthesisRequest(source="./shop.db")) == []
    (tmp_path / "link").symlink_to("/etc")  # a link out of the working folder is out of it
    assert _paths(_pipeline(write={"config": {"path": "./link/users.csv"}}), SynthesisRequest(source="./shop.db")) == [
        "steps[1].config.path"]


def test_a_destination_under_home_admits_the_pipeline_written_for_it(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    _shop(tmp_path / "shop.db")
    result = run_manifest(CHAT_FSM, CHAT_CAPABILITIES,
                          inputs={REQUEST: {"source": "./shop.db", "destination": "~/exports"}})
    assert [e.block for e in result.trace][-2:] == ["validate", "compile"], result.context.get("pipelines.guard_errors")
    assert "path: ~/exports/users.csv" in result.context["pipelines.yaml"]
    elsewhere = _pipeline(write={"config": {"path": "~/.profile"}})
    assert _paths(elsewhere, SynthesisRequest(source="./shop.db", destination="~/exports")) == ["steps[1].config.path"]


@pytest.mark.parametrize("destination", [".", "./out", "out/", "../exports", "~/exports", "ABS", "ABS/deep/er/"])
@pytest.mark.parametrize("source", ["./shop.db", "shop.db", "ABS/shop.db", "@shop"])
def test_the_deterministic_pipeline_passes_whatever_the_destination(destination: str, source: str, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from ontoflow.actors.synthesis import ColumnSummary, DiscoverySummary, TableSummary, synthesize

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    request = SynthesisRequest(source=source.replace("ABS", str(tmp_path)), destination=destination.replace(
        "ABS", str(tmp_path / "abs")), format="CSV")
    tables = [TableSummary(name=n, columns=[ColumnSummary(name="x")], rows=0) for n in ("users", "a/b", ".hidden")]
    document = synthesize(request, DiscoverySummary(source=request.source, tables=tables))
    assert guard_pipeline(document, request) == []


def _shop(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE users (id INTEGER, name TEXT)")
    db.execute("INSERT INTO users VALUES (1, 'Ada')")
    db.commit()
    db.close()
    return path


def _yaml(db: Path, component: str = "sqlite.extractor", path: str = "./out/users.csv") -> str:
    return (f'oml_version: "0.1.0"\nname: shop-to-csv\nsteps:\n'
            f'  - id: extract-users\n    component: {component}\n    mode: read\n'
            f'    config: {{query: "SELECT * FROM users", database: "{db}"}}\n'
            f'  - id: write-users\n    component: csv.writer\n    mode: write\n    needs: [extract-users]\n'
            f'    config: {{path: "{path}"}}\n')


async def _machine(db: Path, script: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    async with open_fake_openai(script) as model:
        monkeypatch.setenv("ONTOFLOW_LLM_URL", model.url)
        monkeypatch.setenv("ONTOFLOW_LLM_MODEL", "fake-model")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
        result = await arun_manifest(CHAT_FSM, CHAT_CAPABILITIES,
                                     inputs={REQUEST: {"source": str(db)}, "pipelines.synthesizer": "llm"})
    return result, model


@pytest.mark.anyio
async def test_an_unknown_component_is_regenerated_not_a_compile_failure(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    db = _shop(tmp_path / "shop.db")
    script = [tool_answer("generate_pipeline", {"pipeline_yaml": _yaml(db, component="mysql.extractor")}),
              tool_answer("generate_pipeline", {"pipeline_yaml": _yaml(db)})]
    result, model = await _machine(db, script, monkeypatch)
    assert result.status == "completed", result.error
    assert [e.block for e in result.trace][-3:] == ["regenerate", "validate_again", "compile"]
    assert "- steps[0].component: no capability 'mysql.extractor' is loaded" in model.requests[1]["messages"][-1]["content"]


@pytest.mark.anyio
async def test_a_valid_pipeline_writing_outside_the_destination_never_compiles(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    db = _shop(tmp_path / "shop.db")
    target = tmp_path / "home" / ".bashrc"
    script = [tool_answer("generate_pipeline", {"pipeline_yaml": _yaml(db, path=str(target))})]
    result, model = await _machine(db, script, monkeypatch)
    assert [e.block for e in result.trace][-1] == "hand_over" and len(model.requests) == 2
    assert "steps[1].config.path" in result.context["pipelines.message"]
    assert "pipelines.yaml" not in result.context and not target.exists()
    assert str(target) not in result.context["pipelines.message"] and os.path.basename(str(target)) not in (
        result.context["pipelines.message"])
