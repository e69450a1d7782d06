"""Capabilities for the answer size test (loaded by a real ``ontoflow worker`` process).

``t.answer.hold`` writes ``$TOO_LARGE_DIR/started`` and holds its slot until the test creates
``$TOO_LARGE_DIR/release``; ``t.answer.blob`` answers a string of ``t.size`` characters (with
``t.wait``, it first writes a ``waiting-*`` file and waits for ``go``: the steps waiting then
answer together, in one flush); ``t.answer.handle`` is where a failed blob is routed.
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

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(id="t.answer.hold", outputs=["t.held"], timeout_ms=None)

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        (_folder() / "started").write_text("started")
        while not (_folder() / "release").exists():
            await anyio.sleep(0.01)  # another process's file: no event to wait on
        return {"t.held": True}


class Blob(Capability):
    """Answers a blob of ``t.size`` characters and its length."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="t.answer.blob", outputs=["t.blob", "t.length"], timeout_ms=None,
        input_schema={"type": "object", "properties": {"t.size": {"type": "integer"}, "t.wait": {"type": "boolean"}}})
    go: ClassVar[anyio.Event | None] = None

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        if inputs.get("t.wait"):
            (_folder() / f"waiting-{context.system.run_id}").write_text("waiting")
            cls = type(self)
            if cls.go is None:  # the first one watches for "go"; the others wake with it
                cls.go = anyio.Event()
                while not (_folder() / "go").exists():
                    await anyio.sleep(0.01)  # another process's file: no event to wait on
                cls.go.set()
            else:
                await cls.go.wait()
        return {"t.blob": "x" * inputs["t.size"], "t.length": inputs["t.size"]}


class Handle(Capability):
    """Where a failed blob goes."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(id="t.answer.handle", outputs=["t.handled"])

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        return {"t.handled": True}
