"""A plan step whose capability ``requires`` another: a plan runs no prerequisite for its steps
(a workflow does), so the checker refuses a step no needed step runs the prerequisite for."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.actors.checker.helpers import kinds, meta
from tests.integration._cli import run_ontoflow

from ontoflow.actors.checker import check_document

FIRST = meta("t.first", outputs=["k.first"])
SECOND = meta("t.second", requires=["t.first"], outputs=["k.second"])
CATALOG = {m.id: m for m in (FIRST, SECOND)}


def _plan(*steps: dict, mode: str = "sequential") -> dict:
    return {"execution_mode": mode, "steps": list(steps)}


def test_a_step_whose_prerequisite_no_step_runs_is_refused() -> None:
    # Before: accepted, and `plan run` ran t.second without t.first ever running.
    report = check_document(_plan({"id": "s", "capability": "t.second"}), CATALOG)
    [finding] = kinds(report)["prerequisite"]
    assert not report.ok
    assert finding.path == "steps[0].capability"
    assert "t.second requires t.first" in finding.message and "depends_on" in finding.message


def test_a_prerequisite_run_by_a_step_it_needs_is_enough() -> None:
    assert check_document(_plan({"id": "a", "capability": "t.first"}, {"id": "b", "capability": "t.second"}), CATALOG).ok
    dag = _plan({"id": "a", "capability": "t.first"}, {"id": "b", "capability": "t.second", "depends_on": ["a"]}, mode="dag")
    assert check_document(dag, CATALOG).ok
    # A dag may list a step before the step it depends on (the check raised a KeyError on it).
    backwards = _plan({"id": "b", "capability": "t.second", "depends_on": ["a"]}, {"id": "a", "capability": "t.first"},
                      mode="dag")
    assert check_document(backwards, CATALOG).ok


def test_a_prerequisite_whose_failure_would_not_skip_the_step_is_not_enough() -> None:
    # In a dag without depends_on the two run side by side; an optional step's failure does not
    # skip the steps after it: either way the step may run without its prerequisite.
    side = _plan({"id": "a", "capability": "t.first"}, {"id": "b", "capability": "t.second"}, mode="dag")
    optional = _plan({"id": "a", "capability": "t.first", "required": False}, {"id": "b", "capability": "t.second"})
    for plan in (side, optional):
        [finding] = kinds(check_document(plan, CATALOG))["prerequisite"]
        assert finding.path == "steps[1].capability"


def test_plan_run_refuses_the_plan_before_anything_runs(tmp_path: Path) -> None:
    (tmp_path / "caps.py").write_text(textwrap.dedent('''
        from typing import ClassVar
        from ontoflow import Capability, CapabilityMetadata, Result

        class First(Capability):
            metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(id="t.first", outputs=["k.first"])
            async def execute(self, inputs, context):
                return Result(outputs={"k.first": True})

        class Second(Capability):
            metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
                id="t.second", requires=["t.first"], outputs=["k.second"])
            async def execute(self, inputs, context):
                return Result(outputs={"k.second": True})
    '''))
    (tmp_path / "plan.yaml").write_text("execution_mode: sequential\nsteps:\n  - {id: s, capability: t.second}\n")
    ran = run_ontoflow(tmp_path, "plan", "run", "plan.yaml", "--capabilities", "caps.py")
    assert ran.code == 2, ran
    assert "t.second requires t.first" in ran.stderr
    assert "k.second" not in ran.stdout


def test_a_step_always_skipped_is_found_whatever_order_the_dag_lists_it_in() -> None:
    # The `unreachable` walk followed the document's order: a step listed before the step it
    # needs (which never succeeds) was not reported, the same plan listed the other way was.
    never = meta("t.never", events=["failure"])
    catalog = {m.id: m for m in (never, FIRST)}
    a = {"id": "a", "capability": "t.never", "required": False}
    b = {"id": "b", "capability": "t.first", "depends_on": ["a"]}
    for steps, path in (((a, b), "steps[1]"), ((b, a), "steps[0]")):
        [finding] = kinds(check_document(_plan(*steps, mode="dag"), catalog))["unreachable"]
        assert finding.path == path and "'b' never runs" in finding.message


def test_a_prerequisite_no_capability_provides_is_named_so() -> None:
    lost = meta("t.lost", requires=["t.nowhere"])
    [finding] = kinds(check_document(_plan({"id": "s", "capability": "t.lost"}), {lost.id: lost}))["prerequisite"]
    assert finding.message == "step 's': t.lost requires t.nowhere, which no loaded capability provides"


def test_a_pipeline_step_is_told_in_the_pipeline_own_words() -> None:
    doc = {"oml_version": "0.1.0", "name": "p-x", "steps": [{"id": "a", "component": "t.second", "mode": "read", "config": {}}]}
    [finding] = kinds(check_document(doc, CATALOG))["prerequisite"]
    assert finding.path == "steps[0].component"
    assert "its needs" in finding.message
    doc["steps"] = [{"id": "b", "component": "t.first", "mode": "read", "config": {}}, {**doc["steps"][0], "needs": ["b"]}]
    assert check_document(doc, CATALOG).ok
