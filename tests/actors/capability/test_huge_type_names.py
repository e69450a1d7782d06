"""A capability's exception class is its own, name and all: one named with five million
characters made every log line naming it (``capability_attempt_failed``) five megabytes long.
Log lines name at most ``MAX_TYPE_CHARS`` of a type's name (``type_name``)."""

from __future__ import annotations

from typing import Any

import pytest
from structlog.testing import capture_logs

from ontoflow import Capability, CapabilityMetadata
from ontoflow.actors.capability._scrub import MAX_TYPE_CHARS
from ontoflow.protocols.messages import Invoke

pytestmark = pytest.mark.anyio

_Huge = type("E" * 5_000_000, (Exception,), {})
_HugeBase = type("B" * 5_000_000, (BaseException,), {})


class Raises(Capability):
    metadata = CapabilityMetadata(id="t.raises")

    async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
        raise (_HugeBase if inputs["base"] else _Huge)("x")


@pytest.mark.parametrize("base", [False, True])
async def test_an_exception_class_with_a_huge_name_makes_no_huge_log_line(base: bool) -> None:
    with capture_logs() as logs:
        outcome = await Raises().invoke(Invoke("r", "s", 1, "t.raises", {"base": base}))
    assert (outcome.event, outcome.reason) == ("failure", "error")
    (line,) = [e for e in logs if e["event"] == "capability_attempt_failed"]
    assert len(line["exc_type"]) == MAX_TYPE_CHARS
    assert max(len(repr(e)) for e in logs) < 2_000
