"""Metadata of the wrong type is refused when the capability is loaded or handed to
``run_manifest``, naming the field: a Struct made in Python is not type-checked, and these
failed as a bare TypeError/AttributeError (``id=5``, ``timeout_ms="30s"``, ``flow=[...]``),
crashed every worker as it started (``perceive_interval_ms="5"``), or were refused only by a
remote orchestrator decoding the worker's announcement (a float timeout)."""

from __future__ import annotations

from typing import Any

import pytest

from ontoflow import Capability, CapabilityMetadata
from ontoflow.actors.capability import check_capability_classes
from ontoflow.actors.errors import CapabilityDefinitionError

WRONG = {
    "id an int": ({"id": 5}, r"capability 5 has invalid metadata: Expected `str`, got `int` - at `metadata.id`"),
    "timeout a string": ({"timeout_ms": "30s"}, r"Expected `int \| null`, got `str` - at `metadata.timeout_ms`"),
    "timeout a float": ({"timeout_ms": 2.5}, r"Expected `int \| null`, got `float` - at `metadata.timeout_ms`"),
    "timeout a bool": ({"timeout_ms": True}, r"got `bool` - at `metadata.timeout_ms`"),
    "interval a string": ({"perceive_interval_ms": "5"}, r"Expected `int`, got `str` - at `metadata.perceive_interval_ms`"),
    "idempotent a string": ({"idempotent": "no"}, r"Expected `bool`, got `str` - at `metadata.idempotent`"),
    "description None": ({"description": None}, r"Expected `str`, got `None` - at `metadata.description`"),
    "flow a list": ({"flow": ["x"]}, r"Expected `object`, got `array` - at `metadata.flow`"),
    "unsendable hints": ({"intent_hints": {"keywords": [object()]}}, r"metadata that cannot be sent to an orchestrator"),
    "an observation schema that is none": ({"observation_schema": {"type": "strin"}},
                                           r"'demo.typed': observation_schema does not compile: .*observation_schema.type"),
}


@pytest.mark.parametrize(("fields", "pattern"), list(WRONG.values()), ids=list(WRONG))
def test_a_field_of_the_wrong_type_is_named(fields: dict[str, Any], pattern: str) -> None:
    class Typed(Capability):
        metadata = CapabilityMetadata(**{"id": "demo.typed", **fields})

        async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
            return None

    with pytest.raises(CapabilityDefinitionError, match=pattern):
        check_capability_classes([Typed])


def test_seed_001s_lenient_retry_map_still_loads() -> None:
    class Lenient(Capability):
        metadata = CapabilityMetadata(id="demo.lenient", retry={"max_retries": "3", "backoff_multiplier": 1.5})

        async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
            return None

    assert check_capability_classes([Lenient]) == [Lenient]
    assert Lenient.metadata.retry.max_retries == 3
