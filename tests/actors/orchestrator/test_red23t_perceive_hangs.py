"""A perception with no bound (``timeout_ms: null``) that never returns is said in the log.

``capability.observe`` bounds a poll by the capability's ``timeout_ms``; with ``null`` a poll
that hung stopped that capability's perceptions for good (one at a time per capability) and
nothing said so: triggers fed by it went quiet without a word."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from ontoflow.actors.capability import Capability
from ontoflow.actors.worker._perceptions import Perceptions
from ontoflow.protocols import CapabilityMetadata
from ontoflow.protocols.messages import Observation

pytestmark = pytest.mark.anyio


class Hangs(Capability):
    """Its poll waits for ever, with no bound declared."""

    metadata = CapabilityMetadata(id="test.hangs_unbounded", perceive_interval_ms=10, timeout_ms=None)

    def __init__(self) -> None:
        super().__init__()
        self.polled = anyio.Event()

    async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
        return None

    async def perceive(self) -> list[Observation]:
        self.polled.set()
        await anyio.sleep_forever()
        return []


async def test_a_poll_that_never_returns_is_logged_once_and_not_cancelled() -> None:
    cap = Hangs()
    perceptions = Perceptions({cap.metadata.id: cap}, now=lambda: 0, observed=lambda _: None, still_running_ms=1_000)
    with capture_logs() as logs:
        async with anyio.create_task_group() as tg:
            perceptions.start(tg, 0)
            perceptions.on_tick(0)
            with anyio.fail_after(10):
                await cap.polled.wait()
            perceptions.on_tick(999)
            assert [e for e in logs if e["event"] == "perceive_still_running"] == []
            perceptions.on_tick(1_000)
            perceptions.on_tick(5_000)  # once per poll
            tg.cancel_scope.cancel()
    still = [e for e in logs if e["event"] == "perceive_still_running"]
    assert [(e["capability"], e["running_ms"]) for e in still] == [("test.hangs_unbounded", 1_000)]
