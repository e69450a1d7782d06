"""Capabilities and a worker for the durability tests (loaded by real worker processes).

``t.durable.step`` writes an audit line when it starts and when it is done (with the outputs
it produced), so a test can check that what the journal recorded is what the capability
produced. Run as a script, this module is a worker process that reconnects quickly.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, ClassVar

import anyio
import msgspec

from ontoflow.actors.capability import Capability
from ontoflow.protocols import CapabilityMetadata, StepContext

STEP_ID = "t.durable.step"
BLOB_ID = "t.durable.blob"
ONCE_ID = "t.durable.once"
MODULUS = 1_000_003


def step_value(value: int) -> int:
    """What one step makes of ``t.value`` (the parity test computes it too)."""
    return (value * 3 + 1) % MODULUS


def _audit(record: dict[str, Any]) -> None:
    path = os.environ.get("DURABLE_AUDIT")
    if path:
        with open(path, "a", encoding="utf-8") as fh:  # one short line per write: O_APPEND keeps lines whole
            fh.write(json.dumps(record) + "\n")


class DurableStep(Capability):
    """Computes ``t.value`` from ``t.value`` after a short pause (so kills land mid-step)."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id=STEP_ID,
        input_schema={"type": "object", "properties": {"t.value": {"type": "integer"}}, "required": ["t.value"]},
        outputs=["t.value"],
        idempotent=True,
        timeout_ms=None,
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        system = context.system
        where = {"run": system.run_id, "step": system.step_id}
        _audit({**where, "phase": "start", "t": time.time()})  # when: a test checks it followed the commit
        await anyio.sleep(float(os.environ.get("DURABLE_STEP_S", "0.03")))
        out = step_value(inputs["t.value"])
        _audit({**where, "phase": "done", "out": out})
        return {"t.value": out}


class DurableOnce(DurableStep):
    """``t.durable.step``, but not idempotent: it must never run twice, and an answer it gave
    must never be declared lost (the recovery tests)."""

    metadata: ClassVar[CapabilityMetadata] = msgspec.structs.replace(DurableStep.metadata, id=ONCE_ID,
                                                                     idempotent=False)


class DurableBlob(Capability):
    """Returns ``t.blob``: ``t.size`` characters (a step output over the daemon's value limit)."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id=BLOB_ID,
        input_schema={"type": "object", "properties": {"t.size": {"type": "integer"}}, "required": ["t.size"]},
        outputs=["t.blob"],
        idempotent=True,
        timeout_ms=None,
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        return {"t.blob": "x" * inputs["t.size"]}


def manifest(steps: int = 4, capability: str = STEP_ID) -> dict[str, Any]:
    """A workflow of ``steps`` chained blocks of ``capability`` (``t.durable.step``)."""
    blocks = {}
    for i in range(steps):
        block: dict[str, Any] = {"worker": capability}
        if i + 1 < steps:
            block["transitions"] = [{"on_signal": f"{capability}.success", "action": f"JUMP:b{i + 1}"}]
        blocks[f"b{i}"] = block
    return {"name": "durable", "start": "m", "nodes": {"m": {"entry_block": "b0", "blocks": blocks}}}


async def _serve(address: str) -> None:
    from ontoflow.actors.worker import WorkerHost

    host = WorkerHost([DurableStep(), DurableOnce(), DurableBlob()], address=address, worker_id=f"durable-{os.getpid()}",
                      slots=int(os.environ.get("DURABLE_SLOTS", "16")),
                      reconnect_initial_s=0.05, reconnect_max_s=0.2)
    await host.run()


if __name__ == "__main__":
    from ontoflow.runtime.logging import configure_logging
    from ontoflow.runtime.loop import run

    configure_logging(level="info")  # to stderr, which the tests keep in a file
    run(_serve, sys.argv[1])
