"""A perceiving capability for the trigger tests (loaded by a real worker process).

``t.flood.watch`` reports the same ``FLOOD_COUNT`` observations (fixed ids) every 20 ms, as a
watcher of a folder of many files does, and appends a line to ``FLOOD_AUDIT`` at each poll, so
a test can wait for polls to have happened.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from ontoflow.actors.capability import Capability
from ontoflow.protocols import CapabilityMetadata, StepContext
from ontoflow.protocols.messages import Observation

WATCH_ID = "t.flood.watch"
KIND = "t.flood.seen"


class FloodWatch(Capability):
    """Reports ``FLOOD_COUNT`` observations at every poll."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(id=WATCH_ID, outputs=[], idempotent=True,
                                                                perceive_interval_ms=20)

    async def perceive(self) -> list[Observation]:
        count = int(os.environ.get("FLOOD_COUNT", "100"))
        audit = os.environ.get("FLOOD_AUDIT")
        if audit:
            with open(audit, "a", encoding="utf-8") as fh:
                fh.write("poll\n")
        return [Observation(capability=WATCH_ID, kind=KIND, id=f"item-{n}") for n in range(count)]

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        return {}
