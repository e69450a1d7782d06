"""Capabilities for the plan-limit tests (loaded by worker processes): one makes a big output,
one takes anything and says how big it was."""

from __future__ import annotations

from typing import Any, ClassVar

from ontoflow.actors.capability import Capability
from ontoflow.protocols import CapabilityMetadata, StepContext


class Big(Capability):
    """Outputs ``t.blob``: ``t.n`` characters."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="t.big", input_schema={"type": "object", "properties": {"t.n": {"type": "integer"}}}, outputs=["t.blob"])

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        return {"t.blob": "x" * inputs.get("t.n", 10)}


class Eat(Capability):
    """Outputs the length of the text of ``t.in``."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="t.eat", input_schema={"type": "object", "properties": {"t.in": {}}}, outputs=["t.size"])

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        return {"t.size": len(str(inputs.get("t.in")))}


CAPABILITIES = [Big, Eat]
