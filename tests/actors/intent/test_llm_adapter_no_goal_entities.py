"""A model that names no goal has no schema its entities could be held to: none are taken.

Before, an answer with ``goal: ""`` kept whatever entities the model wrote, unchecked (the
catalogue's rules are a goal's): any names, any values, any size up to the answer's bound.
The gate then asked "did you mean...?" and its record of the turn, entities included, went
into the session's journal and the client's ``AskReply.intent``."""

from __future__ import annotations

import msgspec
import pytest

from ontoflow.actors.intent._llm_adapter import LlmAdapter
from ontoflow.actors.llm import LlmClient, LlmConfig
from tests.support.fake_openai import answer, open_fake_openai

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("domain", ["finance", ""])
async def test_entities_without_a_goal_are_dropped(catalogue, domain: str) -> None:
    injected = {"ontoflow.intent": {"x": 1}, "run": True, "k" * 10_000: ["v" * 1000] * 100}
    content = msgspec.json.encode({"primary_domain": domain, "goal": "", "entities": injected, "confidence": 0.9})
    async with open_fake_openai([answer(content=content.decode())]) as model:
        adapter = LlmAdapter(LlmClient(LlmConfig(base_url=model.url, model="fake", api_key_env=None)), catalogue)
        intent = await adapter.classify("preço da Petrobras")
    assert (intent.primary_domain, intent.goal, intent.entities) == (domain, "", {})
    assert len(model.requests) == 1  # not a mistake to retry: no goal fits, as the prompt allows
