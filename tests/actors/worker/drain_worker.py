"""A worker process for the drain tests: ``t.drain.slow`` sleeps ``DRAIN_STEP_S`` and every
capability event (start, done, shutdown) is appended to ``DRAIN_AUDIT``.

Run as a script: ``python drain_worker.py ADDRESS`` serves with ``drain_on_signals`` and a
grace period of ``DRAIN_GRACE_S``.
"""

from __future__ import annotations

import os
import sys
from typing import Any, ClassVar

import anyio

from ontoflow.actors.capability import Capability
from ontoflow.protocols import CapabilityMetadata, StepContext

SLOW_ID = "t.drain.slow"


def _audit(line: str) -> None:
    with open(os.environ["DRAIN_AUDIT"], "a", encoding="utf-8") as fh:
        fh.write(line + "\n")


class Slow(Capability):
    """Sleeps, then answers ``t.slept``."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(id=SLOW_ID, outputs=["t.slept"], timeout_ms=None)

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        _audit("start")
        await anyio.sleep(float(os.environ.get("DRAIN_STEP_S", "0.5")))
        _audit("done")
        return {"t.slept": True}

    async def shutdown(self) -> None:
        _audit("shutdown")


async def _serve(address: str) -> None:
    from ontoflow.actors.worker import WorkerHost

    host = WorkerHost([Slow()], address=address, worker_id="drainer", slots=2, drain_on_signals=True,
                      grace_s=float(os.environ.get("DRAIN_GRACE_S", "5")), reconnect_initial_s=0.05)
    await host.run()


if __name__ == "__main__":
    anyio.run(_serve, sys.argv[1], backend="asyncio")
    sys.exit(0)
