"""Bytes one step outputs reach the next step's inputs (msgpack carries them); an exception
quoting them, as ``b'...'`` or decoded, never reaches the trace or ``ontoflow.last_failure``."""

from __future__ import annotations

from typing import Any

import pytest

from ontoflow import Capability, CapabilityMetadata, arun_manifest
from ontoflow.protocols.capability import RetryPolicy
from ontoflow.protocols.context import StepContext

pytestmark = pytest.mark.anyio

CARD = "card 4111 1111 1111 1111 exp 09/29"


class Emit(Capability):
    metadata = CapabilityMetadata(id="t.emit", events=["success", "failure"], input_schema={"type": "object"},
                                  outputs=["t.blob"])

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Any:
        return {"t.blob": CARD.encode()}


class Parse(Capability):
    metadata = CapabilityMetadata(id="t.parse", events=["success", "failure"], retry=RetryPolicy(max_retries=0),
                                  input_schema={"type": "object", "properties": {"t.blob": {}},
                                                "required": ["t.blob"]})

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Any:
        blob = inputs["t.blob"]
        raise ValueError(f"cannot parse {blob!r} ({blob.decode()})")


MANIFEST = {
    "start": "main",
    "nodes": {"main": {"entry_block": "emit", "blocks": {
        "emit": {"worker": "t.emit", "transitions": [{"on_signal": "success", "action": "JUMP:parse"}]},
        "parse": {"worker": "t.parse", "transitions": [{"on_signal": "success", "action": "RETURN"}]},
    }}},
}


async def test_bytes_handed_to_a_step_are_scrubbed_from_its_error() -> None:
    result = await arun_manifest(MANIFEST, [Emit, Parse])
    step = result.trace[-1]
    assert step.capability == "t.parse" and step.event == "failure", result.trace
    assert step.error is not None and step.error.startswith("unknown: ValueError: cannot parse b'<redacted>'")
    for seen in (step.error, str(result.context.get("ontoflow.last_failure"))):
        assert "4111" not in seen
