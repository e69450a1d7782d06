"""Capabilities for the stop-signal tests (loaded by worker processes): one that ends at once,
one that tells the test it started (a line on a TCP socket, with its process id) and then never
ends, and one whose worker, shutting down after the run, sends its parent (the ``ontoflow``
command) a stop signal: a signal that comes after the run ended."""

from __future__ import annotations

import os
import signal
import socket
from typing import Any, ClassVar

import anyio

from ontoflow.actors.capability import Capability
from ontoflow.protocols import CapabilityMetadata, StepContext

PORT, LATE_SIGNAL = "STOP_TEST_PORT", "STOP_TEST_SIGNAL"


class Quick(Capability):
    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="t.quick", input_schema={"type": "object"}, outputs=["t.x"])

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        return {"t.x": 1}


class Hang(Capability):
    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="t.hang", input_schema={"type": "object"}, outputs=["t.y"], timeout_ms=600_000)

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        with socket.create_connection(("127.0.0.1", int(os.environ[PORT]))) as told:
            told.sendall(f"{os.getpid()}\n".encode())
        await anyio.sleep_forever()
        return {}


class Late(Capability):
    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="t.late", input_schema={"type": "object"}, outputs=["t.z"])

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        return {"t.z": 2}

    async def shutdown(self) -> None:
        # Runs as the worker stops, after the run's end: the signal comes late.
        if os.environ.get(LATE_SIGNAL):
            os.kill(os.getppid(), getattr(signal, os.environ[LATE_SIGNAL]))


CAPABILITIES = [Quick, Hang, Late]
