"""Capabilities for the roles and session tests (loaded by real ``ontoflow worker`` processes).

``t.roles.step`` answers ``t.out = "real"`` after ``ROLES_STEP_S`` seconds (long enough for a
forger to try to answer for it first). ``t.roles.watch`` declares an ``observation_schema``:
its Observations must carry a ``t.path`` under ``/srv/inbox/`` and nothing else.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

import anyio

from ontoflow.actors.capability import Capability
from ontoflow.protocols import CapabilityMetadata, StepContext

STEP_ID = "t.roles.step"
WATCH_ID = "t.roles.watch"

WATCH_METADATA = CapabilityMetadata(
    id=WATCH_ID,
    outputs=["t.out"],
    timeout_ms=None,
    observation_schema={
        "type": "object",
        "properties": {"t.path": {"type": "string", "pattern": "^/srv/inbox/[a-z0-9]+$"}},
        "required": ["t.path"],
        "additionalProperties": False,
    },
)


class RolesStep(Capability):
    """Answers ``t.out = "real"`` after a pause."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(id=STEP_ID, outputs=["t.out"], timeout_ms=None)

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        await anyio.sleep(float(os.environ.get("ROLES_STEP_S", "0.5")))
        return {"t.out": "real"}


def manifest() -> dict[str, Any]:
    """A one-step workflow of ``t.roles.step``."""
    return {"name": "roles", "start": "m", "nodes": {"m": {"entry_block": "b0", "blocks": {"b0": {"worker": STEP_ID}}}}}


def trigger_manifest() -> dict[str, Any]:
    """A workflow started by each ``arrived`` observation of ``t.roles.watch``."""
    return {**manifest(), "name": "roles_triggered", "triggers": [{"kind": "arrived", "capability": WATCH_ID}]}
