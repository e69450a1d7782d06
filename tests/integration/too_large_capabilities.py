"""Capabilities for the Invoke size test (loaded by a real ``ontoflow worker`` process).

``t.big.hold`` writes ``started`` to ``$TOO_LARGE_DIR/started`` and holds its slot until the test
creates ``$TOO_LARGE_DIR/release``; ``t.big.echo`` answers the length of its ``t.blob`` input;
``t.big.handle`` is where a failed echo is routed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar

import anyio

from ontoflow.actors.capability import Capability
from ontoflow.protocols import CapabilityMetadata, StepContext


def _folder() -> Path:
    return Path(os.environ["TOO_LARGE_DIR"])


class Hold(Capability):
    """Holds its slot until released: a step in flight on the worker meanwhile."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(id="t.big.hold", outputs=["t.held"], timeout_ms=None)

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        (_folder() / "started").write_text("started")
        while not (_folder() / "release").exists():
            await anyio.sleep(0.01)  # another process's file: no event to wait on
        return {"t.held": True}


class Echo(Capability):
    """Answers the length of its blob."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="t.big.echo", outputs=["t.length"], input_schema={"type": "object", "properties": {"t.blob": {"type": "string"}}})

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        return {"t.length": len(inputs["t.blob"])}


class Handle(Capability):
    """Where a failed echo goes."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(id="t.big.handle", outputs=["t.handled"])

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        return {"t.handled": True}
