"""A plan's name and a step's description travel in every Invoke: their length is bounded."""

from __future__ import annotations

import pytest

from ontoflow.protocols import ManifestError
from ontoflow.protocols.plan import MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, plan_from_data


def _problems(**fields) -> list:
    step = {"id": "a", "capability": "t.work", **fields.pop("step", {})}
    with pytest.raises(ManifestError) as info:
        plan_from_data({"steps": [step], **fields})
    return info.value.problems


def test_a_long_name_output_key_or_description_is_refused_at_its_path_without_echoing_it() -> None:
    # Before: a 40 MB name made every Invoke 80 MB; the worker's socket dropped the orchestrator.
    [name] = _problems(name="n" * (MAX_NAME_CHARS + 1))
    assert name.path == "name" and "nnnn" not in name.message and str(MAX_NAME_CHARS) in name.message
    found = _problems(step={"output_key": "k" * (MAX_NAME_CHARS + 1), "description": "d" * (MAX_DESCRIPTION_CHARS + 1)})
    assert [p.path for p in found] == ["steps[0].output_key", "steps[0].description"]


def test_at_the_limits_a_plan_is_taken() -> None:
    plan = plan_from_data({"name": "n" * MAX_NAME_CHARS, "steps": [
        {"id": "a", "capability": "t.work", "output_key": "k" * MAX_NAME_CHARS, "description": "d" * MAX_DESCRIPTION_CHARS}]})
    assert len(plan.name) == MAX_NAME_CHARS
