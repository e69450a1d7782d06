"""A model's answer of countless tool calls that name nothing (``{}``, 3 bytes each: 1.3 million
fit under the answer's size bound) is one warning line with their count.

Before, each was a line of its own: one answer was 70 MB of log, written on the loop's thread
(23 s in which nothing else of the process ran), again for the guided retry and each retry of
the capability base."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from ontoflow.actors.llm import LlmClient, LlmConfig
from tests.support.fake_openai import answer, open_fake_openai

pytestmark = pytest.mark.anyio


async def test_unnamed_tool_calls_are_counted_on_one_line() -> None:
    calls = b",".join([b"{}"] * 10_000 + [b'{"function": {"name": "classify", "arguments": "{}"}}', b'{"function": {}}'])
    body = b'{"choices": [{"message": {"content": "", "tool_calls": [' + calls + b"]}}]}"
    async with open_fake_openai([answer(raw=body)]) as model:
        client = LlmClient(LlmConfig(base_url=model.url, model="fake", api_key_env=None))
        with capture_logs() as logs:
            got = await client.chat([{"role": "user", "content": "hi"}])
    assert [(c.name, c.arguments) for c in got.tool_calls] == [("classify", "{}")]
    unnamed = [e for e in logs if e["event"] == "llm_tool_call_unnamed"]
    assert [e["count"] for e in unnamed] == [10_001]
