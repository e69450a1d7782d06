"""The response format the LLM adapter asks for is one api.openai.com accepts.

OpenAI's strict structured outputs (``json_schema.strict: true``) take only a schema whose every
object lists its keys, all required, and closes them (``additionalProperties: false``); any
other is refused with a 400 before the model is asked. The adapter asked strictly for a schema
whose ``entities`` is an open map (its keys are the goal's), so against OpenAI every sentence
was a 400, a permanent ``LlmError``: the adapter failed for every person. The test applies
OpenAI's documented rule to what the local endpoint was sent (this machine cannot reach
OpenAI's)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from ontoflow.actors.intent._llm_adapter import LlmAdapter
from ontoflow.actors.llm import LlmClient, LlmConfig
from tests.support.fake_openai import answer, open_fake_openai

pytestmark = pytest.mark.anyio


def _strict_problems(node: Any, at: str = "$") -> list[str]:
    """Where ``node`` breaks OpenAI's strict-mode rule for objects (every object node closes its
    keys and requires them all)."""
    if isinstance(node, list):
        return [p for i, item in enumerate(node) for p in _strict_problems(item, f"{at}[{i}]")]
    if not isinstance(node, dict):
        return []
    found = []
    if node.get("type") == "object":
        if node.get("additionalProperties") is not False:
            found.append(f"{at}: additionalProperties must be false")
        if set(node.get("required", [])) != set(node.get("properties", {})):
            found.append(f"{at}: every property must be required")
    return found + [p for key, value in node.items() for p in _strict_problems(value, f"{at}.{key}")]


def _openai_refuses(response_format: dict[str, Any]) -> list[str]:
    spec = response_format["json_schema"]
    return _strict_problems(spec["schema"]) if spec.get("strict") is True else []


async def test_the_response_format_asked_for_is_one_openai_accepts(catalogue) -> None:
    content = msgspec.json.encode({"primary_domain": "finance", "goal": "GET_QUOTE", "confidence": 0.97,
                                   "entities": {"symbol_text": "Vale"}}).decode()
    async with open_fake_openai([answer(content=content)]) as model:
        adapter = LlmAdapter(LlmClient(LlmConfig(base_url=model.url, model="fake", api_key_env=None)), catalogue)
        intent = await adapter.classify("qual o preço da Vale?")
    asked = model.requests[0]["response_format"]
    assert _openai_refuses(asked) == []
    assert asked["json_schema"]["schema"]["properties"]["goal"]["enum"]  # the schema still names the goals
    assert intent.goal == "GET_QUOTE" and intent.entities == {"symbol_text": "Vale"}
