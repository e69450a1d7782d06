"""A capability that fails quoting what it was handed through its payload (loaded by a real worker).

``t.scrub.leak`` declares one harmless input; the block hands it run-context values through
its ``payload_merge_strategy``. It raises an exception whose message quotes every payload
segment between ``<<`` and ``>>`` and, for a JSON segment, each member value too, so a test can
look for the quoted forms in the trace, in ``ontoflow.last_failure`` and in the journal's bytes.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from ontoflow.actors.capability import Capability
from ontoflow.protocols import CapabilityMetadata, StepContext

LEAK_ID = "t.scrub.leak"


class LeakyStep(Capability):
    """Raises a message that quotes the step's payload (what a careless capability does)."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id=LEAK_ID,
        input_schema={"type": "object", "properties": {"t.label": {"type": "string"}}, "required": ["t.label"]},
        outputs=[],
        idempotent=True,
        timeout_ms=None,
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        quoted = []
        for segment in context.payload:
            quoted.append(f"<<{segment.content}>>")
            if segment.content.startswith("{"):
                quoted.extend(f"<<{value}>>" for value in json.loads(segment.content).values())
        raise RuntimeError(f"step {inputs['t.label']} could not use " + " ".join(quoted))


def manifest() -> dict[str, Any]:
    """One block of ``t.scrub.leak`` handed ``t.token`` and ``t.conf`` through its payload."""
    block = {"worker": LEAK_ID, "payload_merge_strategy": ["context:t.token", "context:t.conf"]}
    return {"name": "scrub", "start": "m", "nodes": {"m": {"entry_block": "b", "blocks": {"b": block}}}}
