"""Capabilities and a worker for the hostile client value tests (a real worker process).

``t.hostile.ask`` asks a question with no candidates (any answer but an empty one is taken)
until its input carries ``ontoflow.answer``, then answers ``t.got``; ``t.hostile.hold`` holds
its slot until cancelled; ``t.hostile.echo`` answers at once. Run as a script, this module is a worker process.
"""

from __future__ import annotations

import sys
from typing import Any, ClassVar

import anyio

from ontoflow.actors.capability import Capability, Result
from ontoflow.protocols import CapabilityMetadata, StepContext
from ontoflow.protocols.domain import DOMAIN_OUTPUT_KEY

ASK_ID = "t.hostile.ask"
HOLD_ID = "t.hostile.hold"
ECHO_ID = "t.hostile.echo"


class Ask(Capability):
    """Asks "what?" (no candidates) until answered, then answers ``t.got``."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id=ASK_ID, outputs=["t.got", DOMAIN_OUTPUT_KEY], idempotent=True, timeout_ms=None)

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        if inputs.get("ontoflow.answer") is None:
            out = {"status": "clarification", "result": {"candidates": []}, "explanation": "what?", "metadata": {}}
            return Result(event="clarification", outputs={DOMAIN_OUTPUT_KEY: out})
        return Result(outputs={"t.got": "answered"})


class Echo(Capability):
    """Answers ``t.echoed`` at once."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(id=ECHO_ID, outputs=["t.echoed"], timeout_ms=None)

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        return {"t.echoed": True}


class Hold(Capability):
    """Holds its slot until cancelled."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(id=HOLD_ID, outputs=["t.held"], timeout_ms=None)

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        await anyio.sleep_forever()
        return {"t.held": True}


def manifest(capability: str, steps: int = 1) -> dict[str, Any]:
    """A workflow of ``steps`` steps of ``capability``, one after the other."""
    blocks: dict[str, Any] = {f"b{i}": {"worker": capability, "transitions": [
        {"on_signal": "success", "action": f"JUMP:b{i + 1}"}]} for i in range(steps - 1)}
    blocks[f"b{steps - 1}"] = {"worker": capability}
    return {"start": "m", "nodes": {"m": {"entry_block": "b0", "blocks": blocks}}}


async def _serve(address: str) -> None:
    from ontoflow.actors.worker import WorkerHost

    await WorkerHost([Ask(), Echo(), Hold()], address=address, worker_id="hostile-values", slots=8).run()


if __name__ == "__main__":
    from ontoflow.runtime.loop import run

    run(_serve, sys.argv[1])
