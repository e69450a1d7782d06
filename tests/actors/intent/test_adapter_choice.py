"""Choosing the intent adapter by name, and the LLM choice running as the capability
``intent.llm_classify`` in-process, against a local server speaking the OpenAI
chat-completions API with scripted answers (it stands in for the model)."""

from __future__ import annotations

import msgspec
import pytest
from structlog.testing import capture_logs

from ontoflow.actors.intent import (
    ANY_DOMAIN,
    AdapterChoiceError,
    IntentAdapterFailed,
    LlmCapabilityAdapter,
    Matcher,
    RoutedAdapter,
    adapter_factories,
    understand,
)
from ontoflow.actors.llm import LlmConfig
from ontoflow.protocols.intent import EntryRequest, SessionMemory
from tests.support.fake_openai import answer, open_fake_openai

pytestmark = pytest.mark.anyio

KEY = "sk-test-never-logged-77"
QUOTE = answer(content=msgspec.json.encode({"primary_domain": "finance", "goal": "GET_QUOTE",
                                            "entities": {"symbol_text": "Petrobras"}, "confidence": 0.98}).decode())
SLEPT: list[float] = []


async def _no_wait(seconds: float) -> None:
    SLEPT.append(seconds)  # the backoff's delays are recorded, never waited


def _env(url: str) -> dict[str, str]:
    return {"ONTOFLOW_LLM_URL": url, "ONTOFLOW_LLM_MODEL": "fake", "ONTOFLOW_LLM_API_KEY_ENV": "TEST_KEY", "TEST_KEY": KEY}


def _adapter(url: str, catalogue, monkeypatch) -> LlmCapabilityAdapter:
    monkeypatch.setenv("TEST_KEY", KEY)
    return LlmCapabilityAdapter(catalogue, llm=LlmConfig(base_url=url, model="fake", api_key_env="TEST_KEY"),
                                sleep=_no_wait)


def test_the_matcher_is_the_default_and_an_unknown_name_is_refused_by_its_key() -> None:
    assert adapter_factories({}) == {ANY_DOMAIN: Matcher}
    with pytest.raises(AdapterChoiceError, match=r"--intent-adapter finance: unknown intent adapter 'gpt'"):
        adapter_factories({"finance": "gpt"})


def test_choosing_llm_without_an_endpoint_names_the_variable() -> None:
    with pytest.raises(AdapterChoiceError, match="--intent-adapter llm: .*ONTOFLOW_LLM_URL"):
        adapter_factories({ANY_DOMAIN: "llm"}, environ={})
    with pytest.raises(AdapterChoiceError, match="ONTOFLOW_LLM_TIMEOUT_S"):
        adapter_factories({ANY_DOMAIN: "llm"}, environ={**_env("http://127.0.0.1:9/v1"), "ONTOFLOW_LLM_TIMEOUT_S": "soon"})
    factories = adapter_factories({"finance": "llm"}, environ=_env("http://127.0.0.1:9/v1"))
    assert factories[ANY_DOMAIN] is Matcher and factories["finance"] is not Matcher


async def test_the_llm_choice_runs_as_the_capability_and_its_base_retries_a_500(catalogue, monkeypatch) -> None:
    SLEPT.clear()
    async with open_fake_openai([answer(status=500), answer(status=429), QUOTE]) as model:
        with capture_logs() as logs:
            intent = await _adapter(model.url, catalogue, monkeypatch).classify("qual o preço da Petrobras?")
    assert (intent.goal, intent.entities) == ("GET_QUOTE", {"symbol_text": "Petrobras"})
    assert len(model.requests) == 3 and len(SLEPT) == 2  # two retries, each after a backoff
    assert any(e["event"] == "capability_attempt_failed" for e in logs)
    assert not any(KEY in str(e) or "Petrobras" in str(e) for e in logs)


async def test_an_endpoint_that_keeps_failing_is_a_clear_error_without_the_key(catalogue, monkeypatch) -> None:
    async with open_fake_openai([answer(status=500)]) as model:
        with pytest.raises(IntentAdapterFailed) as caught:
            await _adapter(model.url, catalogue, monkeypatch).classify("qual o preço da Petrobras?")
    assert "answered 500" in str(caught.value) and "after 3 retries" in str(caught.value)
    assert KEY not in str(caught.value) and "Petrobras" not in str(caught.value)
    with pytest.raises(IntentAdapterFailed, match="unreachable"):
        await _adapter("http://127.0.0.1:9/v1", catalogue, monkeypatch).classify("preço da Petrobras")


async def test_a_malformed_answer_is_retried_once_then_a_clarification(catalogue, monkeypatch) -> None:
    async with open_fake_openai([answer(content="{not json")]) as model:
        understood = await understand(EntryRequest(session_id="s1", input_text="preço da Petrobras"), catalogue=catalogue,
                                      adapter=_adapter(model.url, catalogue, monkeypatch), memory=SessionMemory(), now_ms=0)
    assert len(model.requests) == 2 and "cannot be used" in model.requests[1]["messages"][-1]["content"]
    assert understood.planned is None and understood.clarification is not None


async def test_per_domain_the_domains_own_adapter_has_the_last_word(catalogue, monkeypatch) -> None:
    monkeypatch.setenv("TEST_KEY", KEY)
    async with open_fake_openai([QUOTE]) as model:
        routed = RoutedAdapter(catalogue, adapter_factories({"finance": "llm"}, environ=_env(model.url)))
        building = await routed.classify("list the pipes")  # the matcher's, no model asked
        assert routed.name == "matcher" and building.primary_domain != "finance" and not model.requests
        quote = await routed.classify("qual o preço da Petrobras?")
    assert routed.name == "llm" and quote.goal == "GET_QUOTE" and len(model.requests) == 1
    # The finance adapter was built over finance alone.
    schema = model.requests[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["primary_domain"]["enum"] == ["finance", ""]


async def test_a_key_file_gone_since_the_start_fails_the_sentence_not_the_actor(catalogue, tmp_path) -> None:
    gone = LlmConfig(base_url="http://127.0.0.1:9/v1", model="fake", api_key_env=None,
                     api_key_file=str(tmp_path / "missing.key"))
    adapter = LlmCapabilityAdapter(catalogue, llm=gone, sleep=_no_wait)  # built, as the Intent actor does
    with pytest.raises(IntentAdapterFailed, match="cannot read the API key file"):
        await adapter.classify("preço da Petrobras")
    with pytest.raises(AdapterChoiceError, match="--intent-adapter llm: cannot read the API key file"):
        adapter_factories({ANY_DOMAIN: "llm"}, environ={"ONTOFLOW_LLM_URL": "http://127.0.0.1:9/v1",
                                                        "ONTOFLOW_LLM_MODEL": "fake",
                                                        "ONTOFLOW_LLM_API_KEY_FILE": str(tmp_path / "missing.key")})
