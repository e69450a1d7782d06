"""The guard's errors a run carries on are bounded: the first 50, each cut short, and how many
more. A model's answer is untrusted: one pipeline of 20,000 ``${...}`` settings (each a guard
error) put all 20,000 in the run's context (the journal's, on a daemon) and in the one guided
regeneration's prompt (1.5 MB; a 4 MB answer made it 20 MB, past any model's context)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import msgspec
import pytest

from ontoflow import arun_manifest
from ontoflow.actors.synthesis import CHAT_CAPABILITIES, CHAT_FSM
from tests.support.fake_openai import open_fake_openai, tool_answer

pytestmark = pytest.mark.anyio


async def test_countless_guard_errors_make_a_short_regeneration_prompt(tmp_path: Path, monkeypatch) -> None:
    db = tmp_path / "shop.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE users (id INTEGER)")
    conn.commit()
    conn.close()
    config = {f"k{i}": "${a.b}" for i in range(20_000)} | {"x" * 1_000: "${a.b}"}
    pipeline = {"oml_version": "0.1.0", "name": "shop", "steps": [
        {"id": "extract-users", "component": "sqlite.extractor", "mode": "read", "config": config}]}
    answer = tool_answer("generate_pipeline", {"pipeline_yaml": msgspec.json.encode(pipeline).decode()})
    async with open_fake_openai([answer]) as model:
        monkeypatch.setenv("ONTOFLOW_LLM_URL", model.url)
        monkeypatch.setenv("ONTOFLOW_LLM_MODEL", "fake")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
        result = await arun_manifest(CHAT_FSM, CHAT_CAPABILITIES,
                                     inputs={"pipelines.request": {"source": str(db)}, "pipelines.synthesizer": "llm"})
    assert [e.block for e in result.trace][-1] == "hand_over" and len(model.requests) == 2
    errors = result.context["pipelines.guard_errors"]
    assert len(errors) == 51 and errors[-1]["message"] == "and 19951 more errors like these"
    assert all(len(e["path"]) < 100 and len(e["message"]) < 310 for e in errors)
    assert "and 19996 more" in result.context["pipelines.message"]  # the hand-over counts them all
    regeneration = model.requests[1]["messages"][-1]["content"]
    assert len(regeneration) < 10_000 and "- steps[0].config.k0: " in regeneration
    assert "- ...: and 19951 more errors like these" in regeneration
