"""A model's answer that is no YAML at all is told why, where the decoder stopped (line and
column, never the text), so that the one guided regeneration can fix it; before, every such
answer became "(document): expected a map at the top level, got str" and the model was
asked to fix it blind."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ontoflow import arun_manifest
from ontoflow.actors.synthesis import CHAT_CAPABILITIES, CHAT_FSM
from ontoflow.actors.synthesis._guard import guard_pipeline
from tests.support.fake_openai import open_fake_openai, tool_answer

pytestmark = pytest.mark.anyio

BROKEN = 'oml_version: "0.1.0"\nname: shop\nsteps: [{id: extract, component: "SECRET-sk-0123\n'


def test_the_guard_names_where_an_undecodable_answer_stops_not_its_text() -> None:
    problems = guard_pipeline(BROKEN)
    assert [p.path for p in problems] == [""]
    assert problems[0].message.startswith("not valid YAML at line 4, column"), problems[0].message
    assert "SECRET" not in problems[0].message


@pytest.mark.parametrize("text", [
    "a: 1\na: 2\n",                             # a key given twice
    "oml_version: 99999999999999999999999\n",   # past 64 bits
    "? [a, b]\n: 1\n",                         # a key that is a list
])
def test_each_kind_of_undecodable_answer_is_told_why(text: str) -> None:
    problems = guard_pipeline(text)
    assert len(problems) == 1 and "expected a map" not in problems[0].message, problems


def test_prose_is_still_no_pipeline_at_the_root() -> None:
    problems = guard_pipeline("Sure, here is your pipeline.")
    assert [(p.path, p.message) for p in problems] == [("", "expected a map at the top level, got str")]


async def test_the_regeneration_prompt_carries_the_decoder_s_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "shop.db"
    con = sqlite3.connect(db)
    with con:
        con.execute("CREATE TABLE users (id INTEGER)")
    con.close()
    script = [tool_answer("generate_pipeline", {"pipeline_yaml": BROKEN})]
    async with open_fake_openai(script) as model:
        monkeypatch.setenv("ONTOFLOW_LLM_URL", model.url)
        monkeypatch.setenv("ONTOFLOW_LLM_MODEL", "fake-model")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-do-not-log-0123456789")
        result = await arun_manifest(CHAT_FSM, CHAT_CAPABILITIES,
                                     inputs={"pipelines.request": {"source": str(db)}, "pipelines.synthesizer": "llm"})
    assert [e.block for e in result.trace][-3:] == ["regenerate", "validate_again", "hand_over"]
    regeneration = model.requests[1]["messages"][-1]["content"]
    assert "- (document): not valid YAML at line 4, column" in regeneration
    assert "expected a map" not in regeneration
