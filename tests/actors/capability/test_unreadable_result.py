"""What ``execute`` returns is the capability's own object, whose own code may raise while the
base reads it (a dict subclass whose iteration raises, a Result subclass whose ``event`` is a
property that raises): the step ends ``invalid_result``, the capability's fault. Before, the
error escaped as the capability base's own failure (``internal``: "the capability base
failed"), which says the runtime is broken."""

from __future__ import annotations

from typing import Any

import pytest
from structlog.testing import capture_logs

from ontoflow import Capability, CapabilityMetadata
from ontoflow.actors.capability import Result
from ontoflow.protocols.messages import Invoke

pytestmark = pytest.mark.anyio


class _Unreadable(dict):
    def __iter__(self):
        raise RuntimeError("no")

    def keys(self):
        raise RuntimeError("no")


class _EventRaises(Result):
    @property
    def event(self) -> str:  # type: ignore[override]
        raise RuntimeError("no")

    @event.setter
    def event(self, value: str) -> None:
        pass


class Returns(Capability):
    metadata = CapabilityMetadata(id="t.returns", outputs=["t.out"])

    async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
        return _Unreadable({"t.out": 1}) if inputs["kind"] == "dict" else _EventRaises(outputs={"t.out": 1})


@pytest.mark.parametrize("kind", ["dict", "property"])
async def test_a_result_that_raises_when_read_is_an_invalid_result(kind: str) -> None:
    outcome = await Returns().invoke(Invoke("r", "s", 1, "t.returns", {"kind": kind}))
    assert (outcome.event, outcome.reason) == ("failure", "invalid_result"), outcome
    assert outcome.error == "the result cannot be read: RuntimeError"


class Strays(Capability):
    metadata = CapabilityMetadata(id="t.strays", outputs=["t.out"])

    async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
        strays = {f"stray.{i:06d}": i for i in range(100_000)}
        strays["k" * 1_000_000] = 0
        return {"t.out": 1, **strays}


async def test_a_flood_of_undeclared_outputs_is_logged_as_a_count_and_a_few_cut_keys() -> None:
    # Before: one warning naming all 100,001 keys, one of them a megabyte long.
    with capture_logs() as logs:
        outcome = await Strays().invoke(Invoke("r", "s", 1, "t.strays", {}))
    assert (outcome.event, outcome.outputs) == ("success", {"t.out": 1})
    (line,) = [e for e in logs if e["event"] == "undeclared_output_dropped"]
    assert line["count"] == 100_001 and len(line["keys"]) == 20 and max(map(len, line["keys"])) <= 200
