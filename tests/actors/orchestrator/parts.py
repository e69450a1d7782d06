"""Builders for the orchestrator parts' unit tests: a one-block workflow and a recording sink."""

from __future__ import annotations

from typing import Any

from ontoflow.actors.orchestrator.engine import CompiledWorkflow, compile_workflow
from ontoflow.protocols import CapabilityMetadata, manifest_from_data

CAP = CapabilityMetadata(id="test.capability.echo", timeout_ms=1_000, idempotent=True)


def one_step(meta: CapabilityMetadata = CAP) -> CompiledWorkflow:
    """A workflow of one block running ``meta``."""
    document = {"start": "m", "nodes": {"m": {"entry_block": "a", "blocks": {"a": {"worker": meta.id}}}}}
    return compile_workflow(manifest_from_data(document), {meta.id: meta})


class Sent:
    """Records what a part sends, per peer."""

    def __init__(self) -> None:
        self.items: list[tuple[bytes, Any]] = []

    def __call__(self, identity: bytes, message: Any) -> None:
        self.items.append((identity, message))

    def of(self, kind: type) -> list[tuple[bytes, Any]]:
        """What was sent of type ``kind``."""
        return [(i, m) for i, m in self.items if type(m) is kind]
