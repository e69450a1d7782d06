"""A capability that measures how many of its executions overlap (loaded by worker processes)."""

from __future__ import annotations

from typing import Any, ClassVar

import anyio

from ontoflow.actors.capability import Capability
from ontoflow.protocols import ArrayParam, CapabilityMetadata, Decomposition, StepContext


class CountConcurrent(Capability):
    """Counts executions running at once in this process; waits (bounded) until ``t.limit``
    of them overlap, so a scheduler that allows more would show a higher peak."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="t.count",
        input_schema={"type": "object", "properties": {"t.limit": {"type": "integer"}, "t.item": {}}, "required": ["t.limit"]},
        outputs=["t.peak", "t.item"],
        decomposition=Decomposition(array_params=[ArrayParam(param_name="t.items", single_param_name="t.item", max_concurrency=2)]),
    )
    active = 0
    peak = 0
    gate: anyio.Event | None = None

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        cls = type(self)
        if cls.gate is None:
            cls.gate = anyio.Event()
        cls.active += 1
        cls.peak = max(cls.peak, cls.active)
        try:
            if cls.active >= inputs["t.limit"]:
                cls.gate.set()
            with anyio.move_on_after(2):  # the workload's bound, not a test's synchronisation
                await cls.gate.wait()
        finally:
            cls.active -= 1
        return {"t.peak": cls.peak, "t.item": inputs.get("t.item")}


CAPABILITIES = [CountConcurrent]
