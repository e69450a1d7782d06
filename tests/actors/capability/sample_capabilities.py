"""Capabilities loaded by module name in test_loader.py."""

from __future__ import annotations

from typing import Any

from ontoflow.actors.capability import Capability
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.context import StepContext


class _Base(Capability):
    """A shared base without metadata: not a capability of its own."""

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        return dict(inputs)


class EchoCapability(_Base):
    metadata = CapabilityMetadata(id="test.sample.echo")


class ShoutCapability(_Base):
    metadata = CapabilityMetadata(id="test.sample.shout")
