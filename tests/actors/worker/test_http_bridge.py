"""The HTTP domain bridge against a real HTTP service on loopback: the manifest becomes
capabilities, each step one POST /execute carrying the run's confidence and sentence; a service
that is down, unhealthy, answers 500 or answers something that is not a DomainOutput gives a
clear failure, and never the user's words nor the URL's credentials."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from ontoflow.actors.worker import REFUSED, DomainServiceError, WorkerHost, bridge_http_domain, public_url
from ontoflow.protocols.domain import DOMAIN_OUTPUT_KEY
from ontoflow.protocols.intent import INTENT_CONFIDENCE_PARAM, INTENT_PARAMS, INTENT_QUERY_PARAM
from ontoflow.protocols.messages import Invoke, Outcome
from ontoflow.runtime.transport import open_router, shared_context
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


async def test_the_runs_confidence_and_sentence_reach_execute_and_no_log_line(service: DomainService) -> None:
    said = "climate forecast for Lisbon, said Maria"
    with capture_logs() as logs:
        outcome = await _step(service, "Lisbon", **{INTENT_CONFIDENCE_PARAM: 0.96, INTENT_QUERY_PARAM: said})
    assert outcome.event == "success"
    assert service.calls == [{"domain": "climate", "capability": "climate.forecast",
                              "parameters": {"climate.city_text": "Lisbon"}, "confidence": 0.96, "original_query": said}]
    assert logs and not any("Maria" in repr(line) for line in logs)


async def test_every_bridged_capability_declares_the_intent_inputs(service: DomainService) -> None:
    [cls] = (await bridge_http_domain(service.url)).capabilities
    assert set(INTENT_PARAMS) <= set(cls.metadata.input_keys)
    assert not set(INTENT_PARAMS) & set(cls.metadata.required_inputs)


async def _invoke(cap: Any, city: str = "Lisbon") -> Outcome:
    return await cap.invoke(Invoke(run_id="r", step_id="1", attempt=1, capability=type(cap).metadata.id,
                                   inputs={"climate.city_text": city}))


async def test_while_health_fails_steps_fail_at_once_and_run_again_once_it_recovers(service: DomainService) -> None:
    url = service.url.replace("http://", "http://ops:hunter2@")  # credentials never named
    bridged = await bridge_http_domain(url, timeout_s=5)
    [cls], [check] = bridged.capabilities, bridged.checks
    cap = cls()
    await cap.initialize()
    try:
        service.healthy = False
        with capture_logs() as logs:
            assert await check() is False
        assert [line["event"] for line in logs] == ["http_domain_unhealthy"] and "hunter2" not in repr(logs)
        outcome = await _invoke(cap)
        assert outcome.event == "failure" and outcome.retries == 1  # transient: retried (the manifest's policy)
        error = outcome.error or ""
        assert error.startswith("transient: DomainServiceUnavailable: ")
        assert f"POST {service.url}/execute: not sent, the domain service is unhealthy" in error
        assert f"GET {service.url}/health: the domain service answered 503" in error
        assert "hunter2" not in error and service.calls == []  # failed fast: nothing was posted
        service.healthy = True
        assert await check() is True
        assert (await _invoke(cap)).event == "success" and len(service.calls) == 1
    finally:
        await cap.shutdown()


def test_a_url_is_named_without_its_credentials() -> None:
    assert public_url("https://user:pw@svc.example:8443/x?y=1") == "https://svc.example:8443/x?y=1"
    assert public_url("http://token@svc/") == "http://svc/"
    assert public_url("http://svc/a@b") == "http://svc/a@b"


async def test_the_worker_host_repeats_the_health_check_on_its_ticks(service: DomainService) -> None:
    bridged = await bridge_http_domain(service.url, timeout_s=5)
    [cls], [check] = bridged.capabilities, bridged.checks
    send, receive = anyio.create_memory_object_stream[bool](100)

    async def watched() -> None:
        send.send_nowait(await check())

    context = shared_context()
    address = "inproc://http-bridge-health"
    cap = cls()
    async with send, receive, open_router(address, context=context), anyio.create_task_group() as tg:
        host = WorkerHost([cap], address=address, context=context, worker_id="bridge")
        host.timers.every(20, watched, name="http_domain_health")
        await tg.start(host.run)
        with anyio.fail_after(10):
            assert await receive.receive() is True
            service.healthy = False
            while await receive.receive():
                pass
            assert "the domain service is unhealthy" in ((await _invoke(cap)).error or "")
            service.healthy = True
            while not await receive.receive():
                pass
            assert (await _invoke(cap)).event == "success"
        tg.cancel_scope.cancel()
    assert len(service.calls) == 1
