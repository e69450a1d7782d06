"""A step's ``needs`` may name a step listed after it (the guard allows any order without a
cycle); the compiled plan must wire the data from it all the same, so that the plan shows how
data flows and a writer reads the dataset of the step it needs, whatever the order."""

from __future__ import annotations

from ontoflow.actors.capabilities import CAPABILITIES
from ontoflow.actors.pipelines import compile_pipeline
from ontoflow.protocols import pipeline_from_data

CATALOG = {c.metadata.id: c.metadata for c in CAPABILITIES}
STEPS = [
    {"id": "extract", "component": "sqlite.extractor", "mode": "read", "config": {"query": "SELECT 1", "database": "a.db"}},
    {"id": "keep", "component": "table.transform", "mode": "transform", "needs": ["extract"], "config": {"filter": "a > 1"}},
    {"id": "write", "component": "csv.writer", "mode": "write", "needs": ["keep"], "config": {"path": "u.csv"}},
]


def _params(steps: list[dict]) -> dict[str, dict]:
    plan = compile_pipeline(pipeline_from_data({"oml_version": "0.1.0", "name": "p", "steps": steps}), CATALOG)
    return {step.id: step.params for step in plan.steps}


def test_the_order_of_the_steps_does_not_change_the_wiring() -> None:
    in_order = _params(STEPS)
    assert in_order["write"]["data.dataset"] == "${keep.data.dataset}"
    assert _params(list(reversed(STEPS))) == in_order
    assert _params([STEPS[2], STEPS[0], STEPS[1]]) == in_order
