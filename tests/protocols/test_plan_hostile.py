"""Hostile execution plans: ids and references that must be refused, and refused briefly."""

from __future__ import annotations

import pytest

from ontoflow.actors.orchestrator.plans import compile_plan
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.errors import ManifestError
from ontoflow.protocols.plan import plan_from_data


@pytest.mark.parametrize("step_id", ["a\n", "a" * 129, "a\x1b"])
def test_a_step_id_with_a_trailing_newline_or_past_128_characters_is_refused(step_id: str) -> None:
    # "a\n" matched `^...$` (``$`` matches before a final newline) and 100,000 characters passed.
    with pytest.raises(ManifestError) as caught:
        plan_from_data({"steps": [{"id": step_id, "capability": "t.x"}]})
    assert [p.path for p in caught.value.problems] == ["steps[0].id"]
    assert "1-128" in caught.value.problems[0].message


def test_a_reference_with_a_trailing_newline_in_its_step_id_is_refused() -> None:
    with pytest.raises(ManifestError, match="must start with a step id"):
        plan_from_data({"steps": [{"id": "a", "capability": "t.x"},
                                  {"id": "b", "capability": "t.x", "depends_on": ["a"], "params": {"k": "${a\n.k}"}}]})


def test_one_bad_reference_repeated_is_one_problem() -> None:
    # 200,000 copies of one reference were 200,000 identical lines (25 MB) from `plan run`.
    params = {"k.x": "${zz.k.x}" * 1000}
    with pytest.raises(ManifestError) as caught:
        plan_from_data({"steps": [{"id": "a", "capability": "t.x", "params": params}]})
    assert len(caught.value.problems) == 1


def test_one_undeclared_output_referenced_repeatedly_is_one_problem_at_compile() -> None:
    produce = CapabilityMetadata(id="t.produce", events=["success"], outputs=["k.x"])
    consume = CapabilityMetadata(id="t.consume", events=["success"],
                                 input_schema={"type": "object", "properties": {"k.y": {"type": "string"}}})
    plan = plan_from_data({"steps": [{"id": "a", "capability": "t.produce"},
                                     {"id": "b", "capability": "t.consume", "depends_on": ["a"],
                                      "params": {"k.y": "${a.k.nope}" * 1000}}]})
    with pytest.raises(ManifestError) as caught:
        compile_plan(plan, {"t.produce": produce, "t.consume": consume})
    assert [p.path for p in caught.value.problems] == ["steps[1].params.k.y"]
