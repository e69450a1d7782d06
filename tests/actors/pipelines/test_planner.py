"""OML -> plan compilation (deterministic) and run-time connection resolution."""

from __future__ import annotations

from pathlib import Path

import pytest

from ontoflow.protocols import ManifestError, pipeline_from_data, plan_from_data

from ontoflow.actors.capabilities import CAPABILITIES
from ontoflow.actors.orchestrator.plans import compile_plan
from ontoflow.actors.pipelines import ConnectionResolutionError, compile_pipeline, connection_names, load_connections, render_plan, resolve_connections

CATALOG = {c.metadata.id: c.metadata for c in CAPABILITIES}
DOC = {
    "oml_version": "0.1.0",
    "name": "sqlite-to-csv",
    "steps": [
        {"id": "extract", "component": "sqlite.extractor", "mode": "read", "config": {"query": "SELECT 1", "connection": "@default"}},
        {"id": "keep", "component": "table.transform", "mode": "transform", "needs": ["extract"], "config": {"filter": "a > 1"}},
        {"id": "write", "component": "csv.writer", "mode": "write", "needs": ["keep"], "config": {"path": "u.csv", "header": True}},
    ],
}


def test_compile_maps_config_keys_needs_and_data_flow() -> None:
    plan = compile_pipeline(pipeline_from_data(DOC), CATALOG)
    assert plan.name == "sqlite-to-csv" and plan.execution_mode == "dag"
    extract, keep, write = plan.steps
    assert extract.params == {"data.query": "SELECT 1", "data.connection": "@default"}
    assert keep.params["data.dataset"] == "${extract.data.dataset}" and keep.depends_on == ["extract"]
    assert write.params == {"data.path": "u.csv", "data.header": True, "data.dataset": "${keep.data.dataset}"}
    compile_plan(plan, CATALOG)  # the compiled plan is a valid plan


def test_compile_is_deterministic_byte_for_byte_and_reads_back() -> None:
    first = render_plan(compile_pipeline(pipeline_from_data(DOC), CATALOG))
    second = render_plan(compile_pipeline(pipeline_from_data(DOC), CATALOG))
    assert first == second and b"hunter" not in first
    import msgspec

    assert plan_from_data(msgspec.json.decode(first)) == compile_pipeline(pipeline_from_data(DOC), CATALOG)


def test_compile_errors_have_paths() -> None:
    doc = {**DOC, "steps": [{**DOC["steps"][0], "mode": "write", "config": {"query": "x", "bogus": 1}}]}
    with pytest.raises(ManifestError) as info:
        compile_pipeline(pipeline_from_data(doc), CATALOG)
    assert {p.path for p in info.value.problems} == {"steps[0].mode", "steps[0].config.bogus"}


def test_connections_resolve_from_env_first_then_file_in_memory_only(tmp_path: Path) -> None:
    plan = compile_pipeline(pipeline_from_data(DOC), CATALOG)
    assert connection_names(plan) == ["default"]
    file = tmp_path / "c.yaml"
    file.write_text("default: {database: from-file.db}\n")
    resolved = resolve_connections(plan, load_connections(file), environ={})
    assert resolved.steps[0].params["data.connection"] == {"database": "from-file.db"}
    env = resolve_connections(plan, load_connections(file), environ={"ONTOFLOW_CONNECTION_DEFAULT": '{"database": "env.db"}'})
    assert env.steps[0].params["data.connection"] == {"database": "env.db"}
    assert plan.steps[0].params["data.connection"] == "@default"  # the plan itself keeps the name


def test_an_undefined_connection_is_named_without_values() -> None:
    plan = compile_pipeline(pipeline_from_data(DOC), CATALOG)
    with pytest.raises(ConnectionResolutionError, match="@default.*ONTOFLOW_CONNECTION_DEFAULT"):
        resolve_connections(plan, {}, environ={})
