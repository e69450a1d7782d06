"""A capability of your own: find the longest pipe of a building model.

This file is what a user writes: it imports only the public face, ``ontoflow``.
Load it next to the built-ins with ``--capabilities``::

    ontoflow run configs/examples/building_report/my_workflow.yaml \
        --capabilities configs/examples/building_report/my_capability.py

The capability never calls ``list_pipes``: it declares the ontology key it reads
(``infobim.pipes``) and the key it writes (``example.longest_pipe``), and the orchestrator's
context bus connects the two.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ontoflow import Capability, CapabilityMetadata, Result, StepContext


class LongestPipe(Capability):
    """Find the longest pipe among the pipes listed so far.

    Events: ``success`` (``example.longest_pipe`` is ``{id, length_m, material_name}``),
    ``empty`` (there are no pipes).
    """

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="example.capability.longest_pipe",
        description="Find the longest pipe.",
        events=["success", "empty"],
        input_schema={
            "type": "object",
            "properties": {"infobim.pipes": {"type": "array", "items": {"type": "object"}}},
            "required": ["infobim.pipes"],
        },
        outputs=["example.longest_pipe"],
        timeout_ms=5_000,
        idempotent=True,  # a pure function of its inputs: safe to run again
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        """Return the longest pipe; ties go to the pipe listed first."""
        pipes = inputs["infobim.pipes"]
        if not pipes:
            return Result(event="empty")
        longest = max(pipes, key=lambda pipe: pipe.get("length_m", 0))
        found = {key: longest.get(key) for key in ("id", "length_m", "material_name")}
        return Result(outputs={"example.longest_pipe": found})


#: What a loader picks up from this file.
CAPABILITIES = [LongestPipe]
