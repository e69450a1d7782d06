"""OML -> plan compilation (deterministic) and run-time connection resolution."""

from __future__ import annotations

from pathlib import Path

import pytest

from ontoflow.protocols import ManifestError, pipeline_from_data, plan_from_data

from ontoflow.actors.capabilities import CAPABILITIES
from ontoflow.actors.orchestrator.plans import compile_plan
from ontoflow.actors.pipelines import (
    ConnectionResolutionError,
    compile_pipeline,
    connection_names,
    current_connections,
    holds_secret,
    load_connections,
    lookup_connection,
    render_plan,
    resolve_connections,
    using_connections,
)

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


SECRET = "Pa55-w0rd-never-shown"


def test_a_toml_connections_table_is_read_and_a_world_readable_secret_refused(tmp_path: Path) -> None:
    file = tmp_path / "connections.toml"
    file.write_text(f'[connections.shop]\ndatabase = "shop.db"\npassword = "{SECRET}"\n'
                    f'[connections.warehouse]\ndsn = "postgresql://etl:{SECRET}@db.internal/wh"\n')
    file.chmod(0o600)
    assert load_connections(file)["shop"] == {"database": "shop.db", "password": SECRET}
    file.chmod(0o644)
    with pytest.raises(ConnectionResolutionError) as refused:
        load_connections(file)
    assert "readable by everyone (mode 0644)" in str(refused.value) and f"chmod 600 {file}" in str(refused.value)
    assert SECRET not in str(refused.value)
    plain = tmp_path / "paths.toml"  # no secret in it: anyone may read it
    plain.write_text('[connections]\nshop = "./shop.db"\n')
    plain.chmod(0o644)
    assert load_connections(plain) == {"shop": "./shop.db"}


@pytest.mark.parametrize(
    ("value", "secret"),
    [
        ({"database": "a.db"}, False),
        ({"database": "a.db", "password": ""}, False),
        ({"database": "a.db", "Password": "x"}, True),
        ("postgresql://etl:x@host/db", True),
        ("postgresql://etl@host/db", False),
        ({"nested": {"token": "t"}}, True),
        ("sqlite:///shop.db", False),
    ],
)
def test_what_counts_as_a_secret(value: object, secret: bool) -> None:
    assert holds_secret(value) is secret


def test_the_connections_in_use_resolve_after_the_environment_and_the_given_map() -> None:
    plan = compile_pipeline(pipeline_from_data(DOC), CATALOG)
    with using_connections({"default": {"database": "in-use.db"}}):
        assert current_connections() == {"default": {"database": "in-use.db"}}
        assert resolve_connections(plan, environ={}).steps[0].params["data.connection"] == {"database": "in-use.db"}
        given = resolve_connections(plan, {"default": "given.db"}, environ={})
        assert given.steps[0].params["data.connection"] == "given.db"
        assert lookup_connection("default", environ={"ONTOFLOW_CONNECTION_DEFAULT": "env.db"}) == "env.db"
    assert current_connections() == {}
    with pytest.raises(ConnectionResolutionError):
        lookup_connection("default", environ={})
