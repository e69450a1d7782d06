"""The HTTP domain bridge against a real HTTP service on loopback: the manifest becomes
capabilities, each step one POST /execute; a service that is down, answers 500 or answers
something that is not a DomainOutput gives a clear failure, and never the user's words."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ontoflow.actors.worker import REFUSED, DomainServiceError, bridge_http_domain
from ontoflow.protocols.domain import DOMAIN_OUTPUT_KEY
from ontoflow.protocols.messages import Invoke, Outcome
from tests.integration.domain_helpers import DomainService

pytestmark = pytest.mark.anyio


@pytest.fixture
def service() -> Iterator[DomainService]:
    s = DomainService()
    try:
        yield s
    finally:
        s.close()


async def _step(service: DomainService, city: str, **extra: Any) -> Outcome:
    bridged = await bridge_http_domain(service.url, timeout_s=5)
    [cls] = bridged.capabilities
    cap = cls()
    await cap.initialize()
    try:
        return await cap.invoke(Invoke(run_id="r", step_id="1", attempt=1, capability=cls.metadata.id,
                                       inputs={"climate.city_text": city, **extra}))
    finally:
        await cap.shutdown()


async def test_the_manifest_becomes_capabilities_and_an_announced_domain(service: DomainService) -> None:
    bridged = await bridge_http_domain(service.url + "/")
    [cls] = bridged.capabilities
    meta = cls.metadata
    assert meta.id == "climate.forecast" and meta.retry.max_retries == 1
    assert DOMAIN_OUTPUT_KEY in meta.outputs and REFUSED in meta.events
    assert [d["domain"] for d in bridged.domains] == ["climate"] and "handlers" not in bridged.domains[0]


@pytest.mark.parametrize(
    ("city", "event", "explanation"),
    [("Lisbon", "success", "Rain in Lisbon."), ("Springfield", "clarification", "Which Springfield?"),
     ("Atlantis", REFUSED, "I know no city called Atlantis.")],
)
async def test_each_status_of_the_answer_is_an_event(service: DomainService, city: str, event: str, explanation: str) -> None:
    outcome = await _step(service, city)
    assert outcome.event == event
    assert outcome.outputs[DOMAIN_OUTPUT_KEY]["explanation"] == explanation
    assert service.calls == [{"domain": "climate", "capability": "climate.forecast",
                              "parameters": {"climate.city_text": city}, "confidence": 1.0, "original_query": ""}]


@pytest.mark.parametrize(
    ("mode", "calls", "words"),
    [("500", 2, "the domain service answered 500"),  # transient: retried once (the manifest's policy)
     ("garbage", 1, "the answer is not a DomainOutput"),
     ("wrong", 1, "the answer is not a DomainOutput")],
)
async def test_a_broken_answer_is_a_clear_failure_without_the_users_words(
    service: DomainService, mode: str, calls: int, words: str
) -> None:
    service.mode = mode
    outcome = await _step(service, "Reykjavik")
    assert outcome.event == "failure" and not outcome.outputs
    assert f"POST {service.url}/execute" in (outcome.error or "") and words in (outcome.error or "")
    assert "Reykjavik" not in (outcome.error or "")
    assert len(service.calls) == calls


async def test_a_service_that_goes_down_fails_the_step_clearly(service: DomainService) -> None:
    bridged = await bridge_http_domain(service.url, timeout_s=5)
    service.close()
    [cls] = bridged.capabilities
    cap = cls()
    await cap.initialize()
    try:
        outcome = await cap.invoke(Invoke(run_id="r", step_id="1", attempt=1, capability=cls.metadata.id,
                                          inputs={"climate.city_text": "Lisbon"}))
    finally:
        await cap.shutdown()
    assert outcome.event == "failure" and outcome.retries == 1
    assert "the domain service does not answer" in (outcome.error or "")


@pytest.mark.parametrize(
    ("manifest", "words"),
    [({"domain": "climate", "goals": []}, "a domain needs at least one goal"),
     ("not a map", "expected a map at the top level")],
)
async def test_a_bad_manifest_refuses_the_bridge(service: DomainService, manifest: Any, words: str) -> None:
    service.MANIFEST = manifest  # type: ignore[misc]  # this instance only
    with pytest.raises(DomainServiceError, match=words):
        await bridge_http_domain(service.url)


async def test_only_an_http_url_is_bridged() -> None:
    with pytest.raises(DomainServiceError, match="expected an http:// or https:// URL"):
        await bridge_http_domain("ftp://example.org")
