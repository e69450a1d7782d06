"""Shapes a model's answer takes that are still the pipeline: a YAML text wrapped in a Markdown
code fence (with or without a sentence before it), and the pipeline as a map under
``pipeline_yaml`` instead of a text. Each is read as the pipeline on the first answer, not
spent on the one regeneration; against a local server speaking the OpenAI API."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ontoflow import arun_manifest
from ontoflow.actors.synthesis import CHAT_CAPABILITIES, CHAT_FSM
from ontoflow.protocols.documents import decode_document
from tests.support.fake_openai import answer, open_fake_openai, tool_answer

pytestmark = pytest.mark.anyio


def _shop(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE users (id INTEGER, name TEXT)")
    db.commit()
    db.close()
    return path


def _valid(db: Path) -> str:
    return (f'oml_version: "0.1.0"\nname: shop-to-csv\nsteps:\n'
            f'  - id: extract-users\n    component: sqlite.extractor\n    mode: read\n'
            f'    config: {{query: "SELECT * FROM users", database: "{db}"}}\n'
            f'  - id: write-users\n    component: csv.writer\n    mode: write\n    needs: [extract-users]\n'
            f'    config: {{path: "./out/users.csv"}}\n')


async def _first_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reply: Any) -> tuple[Any, int]:
    db = _shop(tmp_path / "shop.db")
    async with open_fake_openai([reply(db)]) as model:
        monkeypatch.setenv("ONTOFLOW_LLM_URL", model.url)
        monkeypatch.setenv("ONTOFLOW_LLM_MODEL", "fake-model")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
        result = await arun_manifest(CHAT_FSM, CHAT_CAPABILITIES,
                                     inputs={"pipelines.request": {"source": str(db)}, "pipelines.synthesizer": "llm"})
    return result, len(model.requests)


@pytest.mark.parametrize("reply", [
    lambda db: answer(content=f"```yaml\n{_valid(db)}```"),
    lambda db: answer(content=f"Here is the pipeline:\n\n```yaml\n{_valid(db)}```\nIt exports users."),
    lambda db: tool_answer("generate_pipeline", {"pipeline_yaml": f"```\n{_valid(db)}```\n"}),
    lambda db: tool_answer("generate_pipeline", {"pipeline_yaml": decode_document(_valid(db).encode(), "yaml")}),
    lambda db: answer(content=_valid(db).replace('name: shop-to-csv\n',
                                                 'name: shop-to-csv\ndescription: |\n  ```sql\n  SELECT 1\n  ```\n')),
], ids=["fenced", "fenced-after-a-sentence", "fenced-in-the-tool-call", "a-map-not-a-text", "a-fence-inside-a-valid-one"])
async def test_the_pipeline_is_read_from_the_first_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           reply: Any) -> None:
    result, asked = await _first_answer(tmp_path, monkeypatch, reply)
    assert result.status == "completed", result.error
    assert [e.block for e in result.trace][-3:] == ["synthesize", "validate", "compile"] and asked == 1


async def test_a_call_to_a_tool_not_offered_runs_nothing_and_is_logged_as_such(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from structlog.testing import capture_logs

    with capture_logs() as logs:
        result, asked = await _first_answer(tmp_path, monkeypatch,
                                            lambda db: tool_answer("discover_database", {"path": str(db)}))
    assert [e.block for e in result.trace][-2:] == ["synthesize", "report_problem"] and asked == 1
    scoped = [e for e in logs if e["event"] == "llm_tool_out_of_scope"]
    assert scoped and scoped[0]["tool_calls"] == 1 and scoped[0]["offered"] == ["generate_pipeline"]
