"""The ``secrets`` a capability is made with are scrubbed whatever form they are handed in:
bytes were dropped without a word (the secret stayed in every error), and one string was
iterated as secrets of one character each (every error read as ``<redacted>``)."""

from __future__ import annotations

from typing import Any

import pytest

from ontoflow.actors.capability import Capability
from ontoflow.protocols.capability import RetryPolicy
from ontoflow.protocols.context import StepContext
from tests.actors.capability._support import make_metadata, make_request

pytestmark = pytest.mark.anyio

TOKEN = "tok-Qx7-wallet"


class Calls(Capability):
    metadata = make_metadata(retry=RetryPolicy(max_retries=0))

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Any:
        raise RuntimeError(f"upstream refused key {TOKEN}")


@pytest.mark.parametrize("secrets", [[TOKEN.encode()], [bytearray(TOKEN.encode())], TOKEN, [None, TOKEN]],
                         ids=["bytes", "bytearray", "one string", "with None"])
async def test_a_secret_in_any_form_is_scrubbed_and_the_rest_stays_readable(secrets: Any) -> None:
    outcome = await Calls(secrets=secrets).invoke(make_request())
    assert outcome.error == "unknown: RuntimeError: upstream refused key <redacted>"


def test_a_secret_of_another_type_is_refused_by_position() -> None:
    with pytest.raises(TypeError, match=r"^secrets\[1\] is a int, expected str or bytes$"):
        Calls(secrets=[TOKEN, 12345678])
