"""A model's answer is untrusted input: JSON nested deeper than msgspec goes raised
RecursionError out of the adapter, which crashes the Intent actor (a few such answers and the
edge is past its restart intensity, down for every client). It is an answer that does not
decode, like any other: one guided retry, then a clarification."""

from __future__ import annotations

import msgspec
import pytest
from structlog.testing import capture_logs

from ontoflow.actors.intent import IntentAdapterFailed, LlmCapabilityAdapter
from ontoflow.actors.intent._llm_adapter import LlmAdapter
from ontoflow.actors.llm import LlmClient, LlmConfig
from tests.support.fake_openai import answer, open_fake_openai

pytestmark = pytest.mark.anyio


async def test_an_answer_nested_too_deep_is_one_that_does_not_decode(catalogue, monkeypatch) -> None:
    monkeypatch.setenv("TEST_LLM_KEY", "sk-test-never-logged-42")
    deep = answer(content='{"entities": {"a": ' + "[" * 100_000 + "]" * 100_000 + "}}")
    async with open_fake_openai([deep, deep]) as model:
        adapter = LlmAdapter(LlmClient(LlmConfig(base_url=model.url, model="fake", api_key_env="TEST_LLM_KEY")),
                             catalogue)
        intent = await adapter.classify("preço da Petrobras")
    assert intent.goal == "" and intent.confidence == 0.0  # no guess: the gate asks
    assert len(model.requests) == 2 and "cannot be used" in model.requests[1]["messages"][-1]["content"]


async def test_an_empty_answer_is_said_by_its_own_event_then_retried(catalogue) -> None:
    # Seed 003: an empty model answer logs ``empty_llm_response`` (it was only "not JSON").
    empty = answer(content="", tool_calls=[("classify", "{}")])
    async with open_fake_openai([empty]) as model:
        adapter = LlmAdapter(LlmClient(LlmConfig(base_url=model.url, model="fake", api_key_env=None)), catalogue)
        with capture_logs() as logs:
            intent = await adapter.classify("preço da Petrobras")
    assert intent.goal == "" and len(model.requests) == 2
    assert [e["tool_calls"] for e in logs if e["event"] == "empty_llm_response"] == [1, 1]


async def test_a_rate_limit_asking_for_a_long_wait_is_not_hammered_by_the_base(catalogue) -> None:
    # Before: Retry-After was ignored; the capability base retried three times within its
    # backoff (well under a second), asking again long before the endpoint said to.
    async with open_fake_openai([answer(status=429, headers={"retry-after": "3600"})]) as model:
        adapter = LlmCapabilityAdapter(catalogue, llm=LlmConfig(base_url=model.url, model="fake", api_key_env=None))
        with pytest.raises(IntentAdapterFailed, match=r"retry after 3600 s.*\(after 0 retries\)"):
            await adapter.classify("preço da Petrobras")
    assert len(model.requests) == 1


@pytest.mark.parametrize("sentence", ["pre\x00ço da \x1b[31mVale\x1b[0m", "preço da Vale 😀\u202e\u200b", "  preço\tda\r\nVale  ",
                                      "ç" * 2000])
async def test_control_and_unicode_sentences_reach_the_model_as_they_are(catalogue, sentence) -> None:
    async with open_fake_openai([answer(content="{}")]) as model:
        adapter = LlmAdapter(LlmClient(LlmConfig(base_url=model.url, model="fake", api_key_env=None)), catalogue)
        with capture_logs() as logs:
            intent = await adapter.classify(sentence)
    assert model.requests[0]["messages"][-1] == {"role": "user", "content": sentence}
    assert intent.original_query == sentence and intent.goal == ""
    assert not [e for e in logs if "Vale" in str(e) or "ççç" in str(e)]


async def test_an_answer_of_countless_invented_entities_makes_a_short_guided_retry(catalogue) -> None:
    # 100,000 undeclared entities (1 MB) made a 9 MB retry prompt: each named with the goal's
    # declared ones, and the key the model chose (as long as it liked) quoted whole.
    entities = {f"k{i}": 1 for i in range(100_000)} | {"x" * 50_000: 1}
    content = ('{"primary_domain": "finance", "goal": "GET_QUOTE", "confidence": 0.9, "entities": '
               + msgspec.json.encode(entities).decode() + "}")
    async with open_fake_openai([answer(content=content)]) as model:
        adapter = LlmAdapter(LlmClient(LlmConfig(base_url=model.url, model="fake", api_key_env=None)), catalogue)
        intent = await adapter.classify("qual o preço da Vale?")
    assert intent.goal == "" and len(model.requests) == 2
    retry = model.requests[1]["messages"][-1]["content"]
    assert len(retry) < 4000 and "declares no such entity" in retry and "and 99993 more like these" in retry
