"""The LLM intent adapter against a local server speaking the OpenAI chat-completions API with
scripted answers (it stands in for the model); the adapter and the rules after it are tested."""

from __future__ import annotations

import msgspec
import pytest
from structlog.testing import capture_logs

from ontoflow.actors.intent import Catalogue, understand
from ontoflow.actors.intent._llm_adapter import LlmAdapter
from ontoflow.actors.llm import LlmClient, LlmConfig, LlmUnavailableError
from ontoflow.protocols.intent import EntryRequest, SessionMemory
from tests.support.fake_openai import answer, open_fake_openai

pytestmark = pytest.mark.anyio

KEY = "sk-test-never-logged-42"


def _json(**fields) -> dict:
    return answer(content=msgspec.json.encode(fields).decode())


QUOTE = _json(primary_domain="finance", goal="GET_QUOTE", entities={"symbol_text": "Petrobras"}, confidence=0.98)


def _adapter(url: str, catalogue: Catalogue, monkeypatch: pytest.MonkeyPatch) -> LlmAdapter:
    monkeypatch.setenv("TEST_LLM_KEY", KEY)
    return LlmAdapter(LlmClient(LlmConfig(base_url=url, model="fake", api_key_env="TEST_LLM_KEY")), catalogue)


async def test_a_good_answer_decodes_into_an_intent_asked_for_by_json_schema(catalogue, monkeypatch) -> None:
    async with open_fake_openai([QUOTE]) as model:
        with capture_logs() as logs:
            intent = await _adapter(model.url, catalogue, monkeypatch).classify("qual o preço da Petrobras?")
    assert (intent.primary_domain, intent.goal, intent.entities) == ("finance", "GET_QUOTE", {"symbol_text": "Petrobras"})
    assert intent.original_query == "qual o preço da Petrobras?" and intent.confidence == 0.98
    asked = model.requests[0]
    schema = asked["response_format"]["json_schema"]["schema"]
    assert "GET_QUOTE" in schema["properties"]["goal"]["enum"] and "finance" in schema["properties"]["primary_domain"]["enum"]
    assert "symbol_text" in asked["messages"][0]["content"]  # the prompt is built from the catalogue
    assert model.headers[0]["authorization"] == f"Bearer {KEY}"
    assert not any(KEY in str(e) or "Petrobras" in str(e) for e in logs)


async def test_an_answer_that_does_not_decode_gets_one_guided_retry(catalogue, monkeypatch) -> None:
    bad = _json(primary_domain="finance", goal="GET_QUOTE", entities={}, confidence="very")
    async with open_fake_openai([bad, QUOTE]) as model:
        intent = await _adapter(model.url, catalogue, monkeypatch).classify("preço da Petrobras")
    assert intent.goal == "GET_QUOTE" and len(model.requests) == 2
    retry = model.requests[1]["messages"][-1]["content"]
    assert "cannot be used" in retry and "$.confidence" in retry


async def test_two_bad_answers_become_a_clarification_never_a_guess(catalogue, monkeypatch) -> None:
    async with open_fake_openai([answer(content="{not json")]) as model:
        adapter = _adapter(model.url, catalogue, monkeypatch)
        understood = await understand(EntryRequest(session_id="s1", input_text="preço da Petrobras"),
                                      catalogue=catalogue, adapter=adapter, memory=SessionMemory(), now_ms=0)
    assert len(model.requests) == 2
    assert understood.planned is None and understood.clarification is not None
    assert understood.clarification.status == "clarification"


async def test_an_entity_the_goal_does_not_declare_is_refused_not_passed_on(catalogue, monkeypatch) -> None:
    # The model's mistake (seed 004's anti-pattern: it inferred a ticker): its guided retry,
    # then the gate's question; never passed on, and never blamed on the sentence.
    inferred = _json(primary_domain="finance", goal="GET_QUOTE",
                     entities={"symbol_text": "Petrobras", "ticker": "PETR4.SA"}, confidence=0.99)
    async with open_fake_openai([inferred]) as model:
        adapter = _adapter(model.url, catalogue, monkeypatch)
        understood = await understand(EntryRequest(session_id="s1", input_text="preço da Petrobras"),
                                      catalogue=catalogue, adapter=adapter, memory=SessionMemory(), now_ms=0)
    assert understood.planned is None and understood.clarification.status == "clarification"
    retry = model.requests[1]["messages"][-1]["content"]
    assert "entities.ticker" in retry and "declares no such entity" in retry
    assert "PETR4" not in understood.clarification.explanation


async def test_an_endpoint_that_fails_raises_a_transient_error_for_the_capability_base(catalogue, monkeypatch) -> None:
    async with open_fake_openai([answer(status=429)]) as model:
        with pytest.raises(LlmUnavailableError, match="answered 429"):
            await _adapter(model.url, catalogue, monkeypatch).classify("preço da Petrobras")
    with pytest.raises(LlmUnavailableError, match="unreachable"):
        await _adapter("http://127.0.0.1:9/v1", catalogue, monkeypatch).classify("preço da Petrobras")


async def test_as_a_capability_the_base_retries_a_rate_limited_endpoint(catalogue, monkeypatch) -> None:
    from ontoflow import arun_manifest
    from ontoflow.actors.intent import LlmClassify, catalogue_view

    plan = {"name": "classify", "execution_mode": "sequential",
            "steps": [{"id": "classify", "capability": "intent.llm_classify"}]}
    async with open_fake_openai([answer(status=429), QUOTE]) as model:
        monkeypatch.setenv("ONTOFLOW_LLM_URL", model.url)
        monkeypatch.setenv("ONTOFLOW_LLM_MODEL", "fake")
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        result = await arun_manifest(plan, [LlmClassify], inputs={
            "intent.text": "qual o preço da Petrobras?", "intent.catalogue": catalogue_view(catalogue)})
    assert result.status == "completed", result.error
    assert result.trace[0].retries == 1 and len(model.requests) == 2
    assert result.context["intent.output"]["goal"] == "GET_QUOTE"
