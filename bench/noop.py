"""The benchmark's capability: does nothing, so what is measured is ontoflow itself."""

from __future__ import annotations

from ontoflow.actors.capability import Capability, Result
from ontoflow.protocols import CapabilityMetadata

__all__ = ["CAPABILITIES", "NoOp"]


class NoOp(Capability):
    """Returns ``success`` at once (or ``branch`` when asked to, for the conditional edge)."""

    metadata = CapabilityMetadata(
        id="bench.noop",
        events=["success", "branch", "failure"],
        input_schema={
            "type": "object",
            "properties": {"bench.take_branch": {"type": "boolean", "default": False}},
        },
        outputs=["bench.count"],
        idempotent=True,
        timeout_ms=None,
    )

    async def execute(self, inputs, context):
        return Result(event="branch" if inputs["bench.take_branch"] else "success")


CAPABILITIES = [NoOp]


def linear_manifest(steps: int = 3) -> dict:
    """A linear run of ``steps`` no-op blocks; the second has a conditional branch edge."""
    blocks: dict[str, dict] = {}
    for i in range(steps):
        transitions = []
        if i + 1 < steps:
            transitions.append({"on_signal": "success", "action": f"JUMP:b{i + 1}"})
            transitions.append({"on_signal": "branch", "action": f"JUMP:b{steps - 1}"})
        blocks[f"b{i}"] = {"worker": "bench.noop", "transitions": transitions}
    return {"name": f"linear-{steps}", "start": "main", "nodes": {"main": {"entry_block": "b0", "blocks": blocks}}}
