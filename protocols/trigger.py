"""A workflow's triggers (seed 001): start a run whenever a capability observes something.

Declared under ``triggers`` in a workflow manifest (:mod:`ontoflow.protocols.manifest`, which
re-exports it); the orchestrator's trigger service starts the runs. A run itself never reads
one, so it lives apart from the manifest's routing.
"""

from __future__ import annotations

import msgspec

__all__ = ["Trigger"]


class Trigger(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Start a run whenever a capability observes something of ``kind`` (seed 001)."""

    kind: str
    capability: str = ""
    description: str = ""
