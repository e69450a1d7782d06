"""A step sent exactly its required inputs, all of a scalar type, keeps no copy for its retries
(``_inputs.plain_required``: a length, not a set of the keys); any other step still has its
mutable inputs kept, so every retry sees them as sent."""

from __future__ import annotations

from typing import Any

import pytest

from ontoflow import Capability, CapabilityMetadata, TransientError
from ontoflow.actors.capability._inputs import plain_keys, plain_required
from ontoflow.protocols.capability import RetryPolicy
from ontoflow.protocols.context import StepContext
from ontoflow.protocols.messages import Invoke
from tests.actors.capability._support import FakeSleep

pytestmark = pytest.mark.anyio

_NO_WAIT = RetryPolicy(max_retries=2, initial_ms=1.0, max_ms=1.0)

_SCHEMA = {
    "type": "object",
    "properties": {"t.name": {"type": "string"}, "t.size": {"type": "integer"}, "t.items": {"type": "array"}},
    "required": ["t.name", "t.size"],
}


def _required(schema: dict[str, Any], *, retried: bool = True) -> int:
    return plain_required(schema, plain_keys(schema, retried=retried))


def test_the_required_keys_are_counted_when_all_are_plain() -> None:
    assert _required(_SCHEMA) == 2
    assert _required({**_SCHEMA, "required": ["t.name", "t.name"]}) == 1  # a repeat counts once
    assert _required({"type": "object"}) == 0  # nothing required: no inputs at all are plain


@pytest.mark.parametrize("schema", [
    {**_SCHEMA, "required": ["t.name", "t.items"]},  # a required list
    {**_SCHEMA, "required": ["t.name", "t.undeclared"]},  # no type vouches for it
    {**_SCHEMA, "$ref": "#/definitions/x", "definitions": {"x": {}}},  # draft-07: siblings of a $ref ignored
    {**_SCHEMA, "required": "t.name"},  # not a list
], ids=["mutable", "undeclared", "ref", "malformed"])
def test_no_count_when_a_required_key_may_hold_a_mutable_value(schema: dict[str, Any]) -> None:
    assert _required(schema) == -1


def test_no_count_for_a_capability_never_retried() -> None:
    assert _required(_SCHEMA, retried=False) == -1  # nothing is kept for it at all


class Appends(Capability):
    """Appends to the list it was given, then fails transiently twice."""

    metadata = CapabilityMetadata(id="t.appends", outputs=["t.seen"], retry=_NO_WAIT, input_schema=_SCHEMA)

    def __init__(self) -> None:
        super().__init__(sleep=FakeSleep())
        self.seen: list[dict[str, Any]] = []

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Any:
        self.seen.append({k: list(v) if isinstance(v, list) else v for k, v in inputs.items()})
        for value in inputs.values():
            if isinstance(value, list):
                value.append("from attempt")
        if len(self.seen) < 3:
            raise TransientError("again")
        return {"t.seen": len(self.seen)}


def _invoke(inputs: dict[str, Any]) -> Invoke:
    return Invoke(run_id="r", step_id="s", attempt=1, capability="t.appends", inputs=inputs)


@pytest.mark.parametrize("sent", [
    {"t.name": "n", "t.size": 1},  # exactly the required keys: nothing kept, nothing to keep
    {"t.name": "n", "t.size": 1, "t.items": ["a"]},  # an optional list: kept
    {"t.name": "n", "t.size": 1, "t.other": ["a"]},  # an undeclared list: kept
], ids=["required_only", "optional_list", "undeclared_list"])
async def test_every_retry_sees_the_inputs_as_sent(sent: dict[str, Any]) -> None:
    cap = Appends()
    outcome = await cap.invoke(_invoke({k: list(v) if isinstance(v, list) else v for k, v in sent.items()}))
    assert (outcome.event, outcome.retries) == ("success", 2), outcome
    assert cap.seen == [sent, sent, sent]


class AppendsToARequiredList(Appends):
    """The same, its list required: a step sent exactly its required keys holds a mutable one."""

    metadata = CapabilityMetadata(id="t.appends", outputs=["t.seen"], retry=_NO_WAIT,
                                  input_schema={**_SCHEMA, "required": ["t.name", "t.items"]})


async def test_a_required_list_is_kept_for_the_retries() -> None:
    cap = AppendsToARequiredList()
    outcome = await cap.invoke(_invoke({"t.name": "n", "t.items": ["a"]}))
    assert (outcome.event, outcome.retries) == ("success", 2), outcome
    assert cap.seen == [{"t.name": "n", "t.items": ["a"]}] * 3


class AppendsUnderARef(Appends):
    """The same, its schema a top-level ``$ref``: draft-07 ignores the ``properties`` beside it,
    so a value its ``properties`` call a string may be a list."""

    metadata = CapabilityMetadata(id="t.appends", outputs=["t.seen"], retry=_NO_WAIT, input_schema={
        "$ref": "#/definitions/x", "definitions": {"x": {}}, "properties": {"t.name": {"type": "string"}}})


async def test_a_top_level_ref_keeps_the_inputs_for_the_retries() -> None:
    # plain_keys read ``properties`` beside the $ref: "t.name" counted as a string, nothing was
    # kept, and the retries saw [['a'], ['a', 'x'], ...] (review18).
    cap = AppendsUnderARef()
    outcome = await cap.invoke(_invoke({"t.name": ["a"]}))
    assert (outcome.event, outcome.retries) == ("success", 2), outcome
    assert cap.seen == [{"t.name": ["a"]}] * 3
