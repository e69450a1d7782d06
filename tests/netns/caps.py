"""Capabilities for the cross-host tests; each reports the host (namespace) it ran on.

``OF_TEST_HOST`` names the host (set per worker process); ``OF_TEST_DIR`` is a folder shared
by every namespace (one filesystem), where a step claims its first attempt with a marker file.
"""

from __future__ import annotations

import os

import anyio
import structlog

from ontoflow.actors.capability import Capability
from ontoflow.protocols import CapabilityMetadata

log = structlog.get_logger()


def _where() -> dict:
    return {"test.where": os.environ.get("OF_TEST_HOST", "?"), "test.pid": os.getpid()}


class WhereA(Capability):
    """Says where it ran (offered by one host)."""

    metadata = CapabilityMetadata(id="test.where_a", outputs=["test.where_a"], idempotent=True, timeout_ms=None)

    async def execute(self, inputs, context):
        return {"test.where_a": os.environ.get("OF_TEST_HOST", "?")}


class WhereB(Capability):
    """Says where it ran (offered by another host)."""

    metadata = CapabilityMetadata(id="test.where_b", outputs=["test.where_b"], idempotent=True, timeout_ms=None)

    async def execute(self, inputs, context):
        return {"test.where_b": os.environ.get("OF_TEST_HOST", "?")}


class Spread(Capability):
    """Takes a little while, so concurrent runs need both workers."""

    metadata = CapabilityMetadata(id="test.spread", outputs=["test.where", "test.pid"], idempotent=True, timeout_ms=None)

    async def execute(self, inputs, context):
        await anyio.sleep(0.2)
        return _where()


def _first_attempt(context) -> bool:
    """Claim the step's first attempt across every host (a marker file, created once)."""
    system = context.system
    marker = os.path.join(os.environ["OF_TEST_DIR"], f"{system.run_id}-{system.step_id}")
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


class Hang(Capability):
    """Idempotent: the first attempt hangs (until its worker is killed), later ones finish."""

    metadata = CapabilityMetadata(id="test.hang", outputs=["test.where", "test.pid"], idempotent=True, timeout_ms=None)

    async def execute(self, inputs, context):
        if _first_attempt(context):
            log.warning("test_step_started", where=os.environ.get("OF_TEST_HOST"))
            await anyio.sleep_forever()
        return _where()


class HangOnce(Hang):
    """Not idempotent: losing its worker must end the step ``failure``/``worker_lost``."""

    metadata = CapabilityMetadata(id="test.hang_once", outputs=["test.where", "test.pid"], idempotent=False, timeout_ms=None)


class Wait(Capability):
    """Hangs until cancelled (for cancel and deadline tests)."""

    metadata = CapabilityMetadata(id="test.wait", outputs=["test.where"], idempotent=False, timeout_ms=None)

    async def execute(self, inputs, context):
        log.warning("test_step_started", where=os.environ.get("OF_TEST_HOST"))
        await anyio.sleep_forever()
        return {}


_ALL = [WhereA, WhereB, Spread, Hang, HangOnce, Wait]
_WANTED = os.environ.get("OF_TEST_CAPS")
CAPABILITIES = [c for c in _ALL if _WANTED is None or c.metadata.id in _WANTED.split(",")]
