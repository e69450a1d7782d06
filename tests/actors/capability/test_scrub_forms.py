"""A parameter value quoted in another form than its own still never reaches the Outcome: as an
HTTP client quotes it in the URL of its error (percent-encoded), as a service echoes it back
(another case), as ``json.dumps`` writes it (non-ASCII escaped)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from ontoflow.actors.capability import Capability, scrub
from ontoflow.protocols.capability import RetryPolicy
from ontoflow.protocols.context import StepContext
from tests.actors.capability._support import make_metadata, make_request

pytestmark = pytest.mark.anyio

EMAIL = "alice+billing@example.com"
CITY = "São Paulo & Rio"


class Lookup(Capability):
    """Calls an API the way a capability does, with httpx, and lets raise_for_status raise."""

    metadata = make_metadata(retry=RetryPolicy(max_retries=0))

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Any:
        request = httpx.Request("GET", "https://api.example.com/users",
                                params={"email": inputs["customer.email"], "region": "eu"})
        httpx.Response(404, request=request).raise_for_status()


async def test_an_httpx_error_quoting_the_url_is_scrubbed_of_the_encoded_values() -> None:
    outcome = await Lookup().invoke(make_request({"customer.email": EMAIL, "count": 7}))
    assert outcome.error is not None and outcome.error.startswith("permanent: HTTPStatusError: Client error '404 Not Found'")
    assert "alice" not in outcome.error.lower()
    assert "email=<redacted>&region=eu" in outcome.error


@pytest.mark.parametrize(
    "text",
    [f"user {EMAIL.upper()} unknown", f"body {json.dumps({'city': CITY})}", "q=S%C3%A3o%20Paulo%20%26%20Rio",
     "q=S%C3%A3o+Paulo+%26+Rio", "to=alice%2Bbilling%40example.com"],
    ids=["another case", "json.dumps", "percent-encoded", "form-encoded", "encoded plus and at"],
)
def test_every_usual_form_of_a_value_is_redacted(text: str) -> None:
    scrubbed = scrub(text, values=[EMAIL, CITY])
    assert "<redacted>" in scrubbed
    assert "alice" not in scrubbed.lower() and "Paulo" not in scrubbed and "u00e3o" not in scrubbed


@pytest.mark.parametrize("quoted", ["välue 12345 & x", "v%C3%A4lue%2012345%20%26%20x", "v\\u00e4lue 12345 & x",
                                    "VÄLUE 12345 & X"], ids=["as is", "percent-encoded", "json-escaped", "upper case"])
def test_one_value_among_many_is_still_found(quoted: str) -> None:
    # Only the literals the text holds go into the pattern now (twenty thousand values made a
    # regex that took seconds per failed step): the one quoted must still be among them.
    values = [f"välue {i} & x" for i in range(20_000)]
    assert scrub(f"failed on {quoted} today", values=[values]) == "failed on <redacted> today"
