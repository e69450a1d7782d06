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
