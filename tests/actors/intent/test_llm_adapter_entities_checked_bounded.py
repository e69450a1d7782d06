"""A model's answer of countless invented entities is judged by the first few it can name in
its guided retry, the rest counted, not each checked and worded.

The adapter runs on the daemon's loop (the Intent actor hosts it): every entity was checked and
its problem worded (each message lists the goal's declared entities), 2 s of that loop, in
which nothing else of the daemon ran, for one answer of 330,000 of them (3.5 MB, under the
answer's bound), and again for the retry's. The check is the real one, watched: what it is
given is what the adapter worked through."""

from __future__ import annotations

import msgspec
import pytest

from ontoflow.actors.intent import _llm_adapter
from ontoflow.actors.intent._llm_adapter import LlmAdapter
from ontoflow.actors.llm import LlmClient, LlmConfig
from tests.support.fake_openai import answer, open_fake_openai

pytestmark = pytest.mark.anyio


async def test_countless_invented_entities_are_counted_not_each_checked(catalogue, monkeypatch) -> None:
    checked: list[int] = []
    real = _llm_adapter.check_entities

    def watched(goal, entities, said):
        checked.append(len(entities))
        return real(goal, entities, said)

    monkeypatch.setattr(_llm_adapter, "check_entities", watched)
    entities = {"symbol_text": "Vale"} | {f"k{i}": 1 for i in range(50_000)}
    content = msgspec.json.encode({"primary_domain": "finance", "goal": "GET_QUOTE", "confidence": 0.9,
                                   "entities": entities}).decode()
    async with open_fake_openai([answer(content=content)]) as model:
        adapter = LlmAdapter(LlmClient(LlmConfig(base_url=model.url, model="fake", api_key_env=None)), catalogue)
        intent = await adapter.classify("qual o preço da Vale?")
    assert intent.goal == "" and len(model.requests) == 2  # the guided retry, then no guess
    assert checked and max(checked) <= 1 + 8  # the declared one and the first 8 the retry names
    retry = model.requests[1]["messages"][-1]["content"]
    assert "entities.k0: " in retry and "and 49992 more like these" in retry
