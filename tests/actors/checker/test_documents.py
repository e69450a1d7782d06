"""Plans, pipelines, and the loader's gaps the checker closes (start, one report, config)."""

from __future__ import annotations

import pytest

from ontoflow.actors.checker import check_document, refuse_if_invalid
from ontoflow.protocols.errors import ManifestError
from ontoflow.protocols.manifest import manifest_from_data
from ontoflow.protocols.oml import check_oml
from tests.actors.checker.helpers import block, check, kinds, meta, node

PRODUCE = meta("t.produce", outputs=["k.x"])
CONSUME = meta("t.consume", props={"k.x": {"type": "string"}})


def _plan(ref: str) -> dict:
    return {"execution_mode": "dag", "steps": [
        {"id": "a", "capability": "t.produce"},
        {"id": "b", "capability": "t.consume", "depends_on": ["a"], "params": {"k.x": ref}},
    ]}


def test_a_reference_to_an_undeclared_output_is_an_error() -> None:
    [finding] = kinds(check(_plan("${a.k.nope}"), PRODUCE, CONSUME))["undeclared-output"]
    assert finding.path == "steps[1].params.k.x" and "k.x" in finding.message
    assert check(_plan("${a.k.x}"), PRODUCE, CONSUME).ok


def test_a_dependency_cycle_is_reported_with_its_cycle() -> None:
    plan = {"steps": [
        {"id": "a", "capability": "t.produce", "depends_on": ["b"]},
        {"id": "b", "capability": "t.consume", "depends_on": ["a"]},
    ]}
    [finding] = kinds(check(plan, PRODUCE, CONSUME))["dependency-cycle"]
    assert finding.counterexample[0] == finding.counterexample[-1]
    assert set(finding.counterexample) == {"a", "b"}
    plan["steps"][0]["depends_on"] = []
    assert check(plan, PRODUCE, CONSUME).ok


def test_a_required_plan_input_no_step_provides_is_a_warning() -> None:
    needy = meta("t.needy", required=["k.y"])
    report = check({"steps": [{"id": "a", "capability": "t.needy"}]}, needy)
    [finding] = kinds(report)["missing-input"]
    assert finding.severity == "warning" and report.ok
    assert check({"steps": [{"id": "a", "capability": "t.needy", "params": {"k.y": "v"}}]}, needy).findings == []


def test_a_pipeline_needs_cycle_and_a_missing_config_are_errors() -> None:
    pipe = {"oml_version": "0.1.0", "name": "p", "steps": [
        {"id": "one", "component": "t.produce", "mode": "read", "needs": ["two"], "config": {}},
        {"id": "two", "component": "t.produce", "mode": "read", "needs": ["one"]},
    ]}
    found = kinds(check(pipe, PRODUCE))
    assert found["dependency-cycle"][0].path == "steps[0].needs"
    assert [f.path for f in found["structure"]] == ["steps[1].config"]


def test_an_oml_step_without_config_is_refused_at_its_path() -> None:
    problems = check_oml({"oml_version": "0.1.0", "name": "p", "steps": [{"id": "one", "component": "c", "mode": "read"}]})
    assert [(p.path, p.message.split(" (")[0]) for p in problems] == [("steps[0].config", "required key is missing")]


SEED_002 = {"nodes": {"main": node("a", {"a": block("t.produce")})}}


def test_a_single_node_manifest_without_start_starts_there() -> None:
    assert manifest_from_data(SEED_002).start == "main"
    assert check(SEED_002, PRODUCE).ok


def test_start_is_required_with_several_nodes_unless_given() -> None:
    doc = {"nodes": {**SEED_002["nodes"], "other": node("b", {"b": block("t.produce")})}}
    with pytest.raises(ManifestError) as err:
        manifest_from_data(doc)
    assert [p.path for p in err.value.problems] == ["start"] and "--start" in err.value.problems[0].message
    assert manifest_from_data(doc, start="other").start == "other"
    report = check_document(doc, {"t.produce": PRODUCE}, start="other")
    assert [f.path for f in kinds(report)["unreachable"]] == ["nodes.main"]
    with pytest.raises(ManifestError):
        manifest_from_data(doc, start="nope")


def test_the_loader_reports_capability_problems_with_the_structure_ones() -> None:
    doc = {"start": "main", "nodes": {"main": node("a", {
        "a": block("t.produce", ("success", "JUMP:nowhere")), "b": block("t.unknown")})}}
    with pytest.raises(ManifestError) as err:
        manifest_from_data(doc, catalog={"t.produce": PRODUCE})
    assert {p.path for p in err.value.problems} == {"nodes.main.blocks.a.transitions[0].action", "nodes.main.blocks.b.worker"}


def test_refuse_if_invalid_raises_the_errors_and_returns_warnings() -> None:
    lister = meta("t.list", events=["success", "empty"])
    doc = {"start": "main", "nodes": {"main": node("a", {"a": block("t.list", ("success", "RETURN"))})}}
    report = refuse_if_invalid(doc, {"t.list": lister})
    assert [f.kind for f in report.warnings] == ["unrouted-event"]
    doc["nodes"]["main"]["blocks"]["a"]["worker"] = "t.unknown"
    with pytest.raises(ManifestError) as err:
        refuse_if_invalid(doc, {"t.list": lister})
    assert err.value.problems[0].path == "nodes.main.blocks.a.worker"


def test_the_exports_are_sorted_and_complete() -> None:
    import ontoflow.actors.checker as checker

    assert checker.__all__ == sorted(checker.__all__)
    for name in checker.__all__:
        assert hasattr(checker, name)


def test_a_plan_literal_that_breaks_its_schema_is_an_error() -> None:
    typed = meta("t.typed", props={"k.n": {"type": "integer"}})
    plan = {"steps": [{"id": "a", "capability": "t.typed", "params": {"k.n": "five"}}]}
    [finding] = kinds(check(plan, typed))["type-mismatch"]
    assert finding.path == "steps[0].params.k.n" and "five" not in finding.message  # the rule, never the value
    plan["steps"][0]["params"] = {"k.n": 5}
    assert check(plan, typed).ok


def test_a_document_that_does_not_load_still_gets_a_report() -> None:
    report = check_document({"nodes": [1]}, {})
    assert [f.kind for f in report.findings] == ["structure"] and not report.ok
    assert check_document("not a map", {}).findings[0].path == ""


def test_a_plan_that_does_not_load_still_names_its_unknown_capabilities() -> None:
    # A dependency cycle (or any structure problem) hid an unknown capability until it was
    # fixed: two rounds, where the report promises everything at once.
    plan = {"steps": [
        {"id": "a", "capability": "t.produce", "depends_on": ["b"]},
        {"id": "b", "capability": "t.nope", "depends_on": ["a"]},
    ]}
    found = kinds(check(plan, PRODUCE, CONSUME))
    assert [f.path for f in found["dependency-cycle"]] == ["steps[0].depends_on"]
    [unknown] = found["capability"]
    assert unknown.path == "steps[1].capability" and "t.nope" in unknown.message
