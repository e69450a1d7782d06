"""The model client reads an endpoint's bytes as untrusted: a body nested deeper than msgspec
goes raised RecursionError out of ``LlmClient.chat`` (every caller then saw a crash, not the
``LlmAnswerError`` it handles)."""

from __future__ import annotations

import pytest

from ontoflow.actors.llm import LlmAnswerError, LlmClient, LlmConfig
from tests.support.fake_openai import answer, open_fake_openai

pytestmark = pytest.mark.anyio


async def test_a_body_nested_too_deep_is_not_a_chat_completion(monkeypatch) -> None:
    monkeypatch.setenv("TEST_LLM_KEY", "sk-test-never-logged-42")
    body = b'{"choices": [], "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    async with open_fake_openai([answer(raw=body)]) as model:
        client = LlmClient(LlmConfig(base_url=model.url, model="fake", api_key_env="TEST_LLM_KEY"))
        with pytest.raises(LlmAnswerError, match="not a chat completion"):
            await client.chat([{"role": "user", "content": "hi"}])
