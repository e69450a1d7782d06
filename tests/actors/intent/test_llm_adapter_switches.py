"""A model cannot throw a switch the person did not: a boolean entity whose value the goal
gives words for (finance's ``notify: true``: "me avise"; the pipelines domain's ``run: true``:
"and run it") was taken from the model's answer alone, so "qual o preço da Vale?" could send
a notification, and "export all tables to CSV" run the pipeline and write the files."""

from __future__ import annotations

import msgspec
import pytest
from structlog.testing import capture_logs

from ontoflow.actors.intent._llm_adapter import LlmAdapter
from ontoflow.actors.llm import LlmClient, LlmConfig
from tests.support.fake_openai import answer, open_fake_openai

pytestmark = pytest.mark.anyio


def _quote(**entities) -> dict:
    return answer(content=msgspec.json.encode({"primary_domain": "finance", "goal": "GET_QUOTE",
                                               "entities": {"symbol_text": "Vale", **entities},
                                               "confidence": 0.97}).decode())


async def _classify(catalogue, script: list[dict], sentence: str):
    async with open_fake_openai(script) as model:
        adapter = LlmAdapter(LlmClient(LlmConfig(base_url=model.url, model="fake", api_key_env=None)), catalogue)
        with capture_logs() as logs:
            intent = await adapter.classify(sentence)
    return intent, model.requests, logs


async def test_a_switch_the_sentence_does_not_throw_gets_the_guided_retry(catalogue) -> None:
    intent, asked, logs = await _classify(catalogue, [_quote(notify=True), _quote()], "qual o preço da Vale?")
    assert intent.entities == {"symbol_text": "Vale"} and len(asked) == 2
    retry = asked[1]["messages"][-1]["content"]
    assert "entities.notify: true only when the sentence says so" in retry and "me avise" in retry
    assert not [e for e in logs if "Vale" in str(e)]


async def test_a_model_that_insists_is_asked_about_never_obeyed(catalogue) -> None:
    intent, asked, _ = await _classify(catalogue, [_quote(notify=True)], "qual o preço da Vale?")
    assert intent.goal == "" and intent.confidence == 0.0 and len(asked) == 2


@pytest.mark.parametrize("sentence", ["qual o preço da Vale? Me avise!", "preço da Vale e avise-me", "Vale price, NOTIFY ME"])
async def test_a_switch_the_sentence_throws_is_taken_at_once(catalogue, sentence: str) -> None:
    intent, asked, _ = await _classify(catalogue, [_quote(notify=True)], sentence)
    assert intent.entities == {"symbol_text": "Vale", "notify": True} and len(asked) == 1


async def test_the_default_value_needs_no_words(catalogue) -> None:
    intent, asked, _ = await _classify(catalogue, [_quote(notify=False)], "qual o preço da Vale?")
    assert intent.entities == {"symbol_text": "Vale", "notify": False} and len(asked) == 1
