"""The seeds' own examples, run through the public face as a user would write them.

Each test takes a seed's example as the seed writes it (seed 000's metadata, seed 002's
manifest shape, seed 004's composition metadata) and runs it with ``ontoflow.arun_manifest``:
an orchestrator and a worker host over ``inproc://`` in this process.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from ontoflow import Capability, CapabilityMetadata, Result, arun_manifest

pytestmark = pytest.mark.anyio

RAN: list[str] = []


class ListMaterials(Capability):
    metadata = CapabilityMetadata(
        id="seed.capability.base.list_materials", outputs=["infobim.materials"], timeout_ms=5_000
    )

    async def execute(self, inputs: dict[str, Any], context: Any) -> Result:
        RAN.append(self.metadata.id)
        return Result(outputs={"infobim.materials": ["pvc"]})


class ListPipes(Capability):
    """Seed 000's ``ListPipesCapability`` metadata, in the seed's shape."""

    metadata = CapabilityMetadata(
        id="seed.capability.base.list_pipes",
        events={
            "success": "seed.capability.base.list_pipes.success",
            "failure": "seed.capability.base.list_pipes.failure",
            "required": ["seed.capability.base.list_materials"],
        },
        input_schema={
            "type": "object",
            "properties": {"obdc.base.lang.code": {"type": "string", "enum": ["en", "pt_BR"], "default": "en"}},
        },
        outputs=["seed.lang"],
        timeout_ms=5_000,
    )

    async def execute(self, inputs: dict[str, Any], context: Any) -> Result:
        RAN.append(self.metadata.id)
        return Result(outputs={"seed.lang": inputs["obdc.base.lang.code"]})


def one_block(worker: str) -> dict[str, Any]:
    """A seed-002 manifest of one node and one block."""
    return {"nodes": {"main": {"entry_block": "a", "context_inheritance": True, "static_memory": {}, "blocks": {
        "a": {"worker": worker, "payload_merge_strategy": [], "transitions": [{"on_signal": "success", "action": "RETURN"}]},
    }}}}


async def test_seed000_metadata_runs_its_prerequisite_first() -> None:
    RAN.clear()
    with anyio.fail_after(20):
        result = await arun_manifest(one_block(ListPipes.metadata.id), [ListMaterials, ListPipes],
                                     inputs={"obdc.base.lang.code": "pt_BR"})
    assert result.status == "completed", result.error
    assert RAN == ["seed.capability.base.list_materials", "seed.capability.base.list_pipes"]
    assert result.context["seed.lang"] == "pt_BR"
    assert result.trace[0].prerequisite_of == "seed.capability.base.list_pipes"
