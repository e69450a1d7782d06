"""An undeclared output whose key a capability made of a value it was handed (``{name: ...}``)
is dropped, and the warning that names the dropped keys never holds that value."""

from __future__ import annotations

from typing import Any

import pytest
from structlog.testing import capture_logs

from ontoflow.actors.capability import Capability, Result
from ontoflow.protocols.context import StepContext
from tests.actors.capability._support import make_metadata, make_request

pytestmark = pytest.mark.anyio

EMAIL = "alice.liddell@example.com"


class KeysByValue(Capability):
    metadata = make_metadata(outputs=["test.greeting"])

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Any:
        email = inputs["customer.email"]
        return Result(outputs={"test.greeting": "hi", email: 1, f"seen:{email}": 2, "test.other": 3})


async def test_a_dropped_key_made_of_an_input_never_reaches_the_log() -> None:
    with capture_logs() as logs:
        outcome = await KeysByValue().invoke(make_request({"customer.email": EMAIL}))
    assert outcome.event == "success" and outcome.outputs == {"test.greeting": "hi"}
    (dropped,) = [e for e in logs if e["event"] == "undeclared_output_dropped"]
    assert dropped["count"] == 3
    assert dropped["keys"] == ["<redacted>", "seen:<redacted>", "test.other"]
    assert "alice" not in str(logs)


class KeyStraddlingTheCut(Capability):
    metadata = make_metadata(outputs=["test.greeting"])

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Any:
        return Result(outputs={"test.greeting": "hi", "x" * 185 + inputs["customer.email"]: 1})


async def test_a_value_straddling_where_a_dropped_key_is_cut_never_reaches_the_log() -> None:
    # Cut to 200 characters before it was scrubbed, the value was no longer whole there, and
    # its head got through (review23b).
    with capture_logs() as logs:
        await KeyStraddlingTheCut().invoke(make_request({"customer.email": EMAIL}))
    (dropped,) = [e for e in logs if e["event"] == "undeclared_output_dropped"]
    assert "alice" not in str(dropped["keys"]) and dropped["keys"][0].startswith("x" * 185)
