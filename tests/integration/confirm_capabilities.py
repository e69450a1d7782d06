"""A capability that asks a yes/no question with plain candidates (``["yes", "no"]``, not maps),
loaded by a real worker process (``ontoflow worker --capabilities``)."""

from __future__ import annotations

from typing import Any, ClassVar

from ontoflow.actors.capability import Capability, Result
from ontoflow.protocols import CapabilityMetadata, StepContext
from ontoflow.protocols.domain import DOMAIN_OUTPUT_KEY

#: The candidates a domain may offer as plain values (``actors.intent.choose`` takes them).
CANDIDATES: list[Any] = ["yes", "no", 3, None, {"nested": ["a", "b"]}]


class Confirm(Capability):
    """Asks "Delete it?" without ``t.confirmed``; answers what was chosen with it."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="t.confirm", input_schema={"type": "object", "properties": {"t.confirmed": {}}},
        outputs=["t.done", DOMAIN_OUTPUT_KEY], idempotent=True, timeout_ms=None)

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        if "t.confirmed" not in inputs:
            out = {"status": "clarification", "result": {"candidates": CANDIDATES, "missing": ["t.confirmed", 7]},
                   "explanation": "Delete it?", "metadata": {"answer_param": "t.confirmed"}}
            return Result(event="clarification", outputs={DOMAIN_OUTPUT_KEY: out})
        return Result(outputs={"t.done": f"chose {inputs['t.confirmed']}"})
