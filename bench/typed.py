"""The inputs workload's capability: does nothing with two typed inputs, so what is measured
is ontoflow carrying and checking them (the daemon against the declared schema at submit,
the worker host against the whole ``input_schema`` at each step)."""

from __future__ import annotations

from typing import Any

from ontoflow.actors.capability import Capability, Result
from ontoflow.protocols import CapabilityMetadata

__all__ = ["CAPABILITIES", "INPUTS", "TypedNoOp", "typed_manifest"]

#: The two inputs every run of the workload carries; both keys are declared with a type.
INPUTS: dict[str, Any] = {"bench.label": "run-label", "bench.size": 42}


class TypedNoOp(Capability):
    """Returns ``success`` at once; declares a string and an integer input."""

    metadata = CapabilityMetadata(
        id="bench.typed",
        events=["success", "failure"],
        input_schema={
            "type": "object",
            "properties": {
                "bench.label": {"type": "string", "minLength": 1, "maxLength": 64},
                "bench.size": {"type": "integer", "minimum": 0, "maximum": 1_000_000},
            },
            "required": ["bench.label", "bench.size"],
        },
        outputs=[],
        idempotent=True,
        timeout_ms=None,
    )

    async def execute(self, inputs, context):
        return Result(event="success")


CAPABILITIES = [TypedNoOp]


def typed_manifest(steps: int = 3) -> dict:
    """A linear run of ``steps`` typed no-op blocks, each reading both inputs."""
    blocks: dict[str, dict] = {}
    for i in range(steps):
        transitions = [{"on_signal": "success", "action": f"JUMP:b{i + 1}"}] if i + 1 < steps else []
        blocks[f"b{i}"] = {"worker": "bench.typed", "transitions": transitions}
    return {"name": f"typed-{steps}", "start": "main", "nodes": {"main": {"entry_block": "b0", "blocks": blocks}}}
