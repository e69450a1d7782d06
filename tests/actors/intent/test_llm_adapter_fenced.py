"""A model that wraps its JSON in a Markdown code fence (```json ... ```) answered well, yet
was refused twice as "not JSON" and the person got "I did not recognise what you want". The
fence is taken off; what is inside is held to the schema and the catalogue as strictly."""

from __future__ import annotations

import msgspec
import pytest

from ontoflow.actors.intent._llm_adapter import LlmAdapter
from ontoflow.actors.llm import LlmClient, LlmConfig
from tests.support.fake_openai import answer, open_fake_openai

pytestmark = pytest.mark.anyio

QUOTE = msgspec.json.encode({"primary_domain": "finance", "goal": "GET_QUOTE", "entities": {"symbol_text": "Petrobras"},
                             "confidence": 0.97}).decode()


def _adapter(url: str, catalogue) -> LlmAdapter:
    return LlmAdapter(LlmClient(LlmConfig(base_url=url, model="fake", api_key_env=None)), catalogue)


@pytest.mark.parametrize("content", [f"```json\n{QUOTE}\n```", f"  ```\n{QUOTE}\n```\n", f"```JSON \n{QUOTE}\n  ```"])
async def test_json_in_one_code_fence_is_read_at_the_first_answer(catalogue, content: str) -> None:
    async with open_fake_openai([answer(content=content)]) as model:
        intent = await _adapter(model.url, catalogue).classify("qual o preço da Petrobras?")
    assert (intent.goal, intent.entities, len(model.requests)) == ("GET_QUOTE", {"symbol_text": "Petrobras"}, 1)


@pytest.mark.parametrize("content", [
    f"Here you go:\n```json\n{QUOTE}\n```",  # prose around it: not what was asked
    f"```json\n{QUOTE}\n```\n```json\n{QUOTE}\n```",  # two answers
    "```json\n" + QUOTE.replace("GET_QUOTE", "SELL_EVERYTHING") + "\n```",  # a goal outside the catalogue
])
async def test_what_the_fence_holds_is_still_judged_strictly(catalogue, content: str) -> None:
    async with open_fake_openai([answer(content=content)]) as model:
        intent = await _adapter(model.url, catalogue).classify("qual o preço da Petrobras?")
    assert intent.goal == "" and intent.confidence == 0.0 and len(model.requests) == 2
