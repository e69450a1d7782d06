"""A worker whose ``Ready`` is bigger than a small daemon's ``--max-message-bytes``: 200
capabilities with wordy schemas (about 150 KB). Run as a script, it is that worker process,
assuming a short heartbeat before its Welcome so an unanswered session ends soon."""

from __future__ import annotations

import sys
from typing import Any, ClassVar

from ontoflow.actors.capability import Capability
from ontoflow.protocols import CapabilityMetadata, StepContext


def _capability(i: int) -> type[Capability]:
    properties = {f"t.wordy.key_{i}_{k}": {"type": "string", "description": "a key with a long description " * 4}
                  for k in range(4)}

    class Wordy(Capability):
        metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
            id=f"t.wordy.c{i}", input_schema={"type": "object", "properties": properties}, outputs=[])

        async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
            return {}

    return Wordy


CAPABILITIES = [_capability(i) for i in range(200)]


async def _serve(address: str) -> None:
    from ontoflow.actors.worker import WorkerHost

    host = WorkerHost([c() for c in CAPABILITIES], address=address, worker_id="wordy", heartbeat_ms=100, liveness=2,
                      reconnect_initial_s=0.05, reconnect_max_s=0.2)
    await host.run()


if __name__ == "__main__":
    from ontoflow.runtime.logging import configure_logging
    from ontoflow.runtime.loop import run

    configure_logging(level="info")  # to stderr, which the test keeps in a file
    run(_serve, sys.argv[1])
