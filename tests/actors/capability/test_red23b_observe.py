"""What ``perceive()`` returns may be a list whose own iteration raises (a lazy result set whose
cursor closed, a library's ``sys.exit``): that is dropped and logged as any other list that
cannot be sent, never raised into the worker host's task group."""

from __future__ import annotations

from typing import Any

import pytest
from structlog.testing import capture_logs

from ontoflow.actors.capability import Capability, observe
from ontoflow.protocols import CapabilityMetadata
from ontoflow.protocols.messages import Observation

pytestmark = pytest.mark.anyio

GOOD = Observation(capability="test.eye", kind="seen", id="1")


class ClosedCursor(list):
    """A list subclass whose iteration fails, as a lazy ORM result does once its session ends."""

    raised: BaseException = RuntimeError("cursor closed: card-4111111111111111")

    def __iter__(self) -> Any:
        raise self.raised


class ExitingCursor(ClosedCursor):
    raised = SystemExit(9)


class Eye(Capability):
    metadata = CapabilityMetadata(id="test.eye", perceive_interval_ms=5)
    perceived: Any = None

    async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
        return None

    async def perceive(self) -> Any:
        return self.perceived


@pytest.mark.parametrize("cursor", [ClosedCursor, ExitingCursor])
async def test_a_list_whose_iteration_raises_is_dropped_and_logged(cursor: type[ClosedCursor]) -> None:
    eye = Eye()
    eye.perceived = cursor([GOOD])
    with capture_logs() as logs:
        assert await observe(eye) == []
    (dropped,) = [e for e in logs if e["event"] == "observations_dropped"]
    assert dropped["reason"] == f"reading the {cursor.__name__} perceive returned raised {type(cursor.raised).__name__}"
    assert "4111" not in str(logs)
