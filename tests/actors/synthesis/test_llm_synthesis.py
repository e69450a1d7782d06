"""The model-backed synthesiser through the chat state machine, against a local server that
speaks the OpenAI chat-completions API with scripted answers (the model this machine cannot
reach). What is tested: the adapter, its prompts and its scoping, and the state machine."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import msgspec
import pytest
from structlog.testing import capture_logs

from ontoflow import arun_manifest
from ontoflow.actors.synthesis import CHAT_CAPABILITIES, CHAT_FSM
from ontoflow.actors.synthesis._capabilities import EMPTY_FALLBACK
from tests.support.fake_openai import answer, open_fake_openai, tool_answer

pytestmark = pytest.mark.anyio

REQUEST = "pipelines.request"
KEY = "sk-test-do-not-log-0123456789"


def _shop(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE users (id INTEGER, name TEXT)")
    db.execute("INSERT INTO users VALUES (1, 'Ada')")
    db.commit()
    db.close()
    return path


def _valid(db: Path) -> str:
    return (f'oml_version: "0.1.0"\nname: shop-to-csv\nsteps:\n'
            f'  - id: extract-users\n    component: sqlite.extractor\n    mode: read\n'
            f'    config: {{query: "SELECT * FROM users", database: "{db}"}}\n'
            f'  - id: write-users\n    component: csv.writer\n    mode: write\n    needs: [extract-users]\n'
            f'    config: {{path: "./users.csv"}}\n')


LEGACY = "version: 1\nname: shop\nconnectors: [sqlite]\ntasks: []\n"


@pytest.fixture
def llm_env(monkeypatch: pytest.MonkeyPatch):
    def use(url: str) -> None:
        monkeypatch.setenv("ONTOFLOW_LLM_URL", url)
        monkeypatch.setenv("ONTOFLOW_LLM_MODEL", "fake-model")
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return use


async def _run(db: Path) -> Any:
    return await arun_manifest(CHAT_FSM, CHAT_CAPABILITIES,
                               inputs={REQUEST: {"source": str(db)}, "pipelines.synthesizer": "llm"})


def _blocks(result: Any) -> list[str]:
    return [e.block for e in result.trace]


async def test_a_legacy_answer_then_a_valid_one_compiles_after_one_guided_regeneration(tmp_path, llm_env) -> None:
    db = _shop(tmp_path / "shop.db")
    script = [tool_answer("generate_pipeline", {"pipeline_yaml": LEGACY}),
              tool_answer("generate_pipeline", {"pipeline_yaml": _valid(db)})]
    async with open_fake_openai(script) as model:
        llm_env(model.url)
        with capture_logs() as logs:
            result = await _run(db)
    assert result.status == "completed", result.error
    assert _blocks(result) == ["capture_intent", "discover", "synthesize", "validate", "regenerate", "validate_again",
                               "compile"]
    first, second = model.requests
    for asked in (first, second):  # scoped: at synthesis the model is offered one tool only
        assert [t["function"]["name"] for t in asked["tools"]] == ["generate_pipeline"]
        assert asked["tool_choice"]["function"]["name"] == "generate_pipeline"
        assert "OML v0.1.0 CONTRACT" in asked["messages"][0]["content"]
    regeneration = second["messages"][-1]["content"]
    for path in ("version", "connectors", "tasks", "steps"):
        assert f"- {path}: " in regeneration
    assert model.headers[0]["authorization"] == f"Bearer {KEY}"
    assert not any(KEY in msgspec.json.encode(e, enc_hook=str).decode() for e in logs)
    assert "schema_guard_fail" in [e["event"] for e in logs] and "regeneration_attempt" in [e["event"] for e in logs]


async def test_two_invalid_answers_reach_a_person_and_the_model_is_asked_twice_only(tmp_path, llm_env) -> None:
    db = _shop(tmp_path / "shop.db")
    async with open_fake_openai([tool_answer("generate_pipeline", {"pipeline_yaml": LEGACY})]) as model:
        llm_env(model.url)
        result = await _run(db)
    assert _blocks(result)[-1] == "hand_over" and len(model.requests) == 2
    assert "still wrong after one correction" in result.context["pipelines.message"]


async def test_an_empty_answer_gets_a_fallback_message_and_the_event(tmp_path, llm_env) -> None:
    db = _shop(tmp_path / "shop.db")
    async with open_fake_openai([answer(content="")]) as model:
        llm_env(model.url)
        with capture_logs() as logs:
            result = await _run(db)
    assert _blocks(result)[-1] == "report_problem"
    assert result.context["pipelines.message"] == EMPTY_FALLBACK
    assert "empty_llm_response" in [e["event"] for e in logs]


async def test_malformed_json_and_a_failing_endpoint_end_in_a_clear_answer(tmp_path, llm_env) -> None:
    db = _shop(tmp_path / "shop.db")
    async with open_fake_openai([answer(raw=b"{this is not json")]) as model:
        llm_env(model.url)
        malformed = await _run(db)
    assert _blocks(malformed)[-1] == "report_problem" and len(model.requests) == 1  # permanent: no retry
    assert "not a chat completion" in malformed.context["pipelines.message"]
    async with open_fake_openai([answer(status=500)]) as model:
        llm_env(model.url)
        down = await _run(db)
    assert _blocks(down)[-1] == "report_problem"
    assert len(model.requests) == 3  # transient: the base retried it twice
    assert "answered 500" in down.context["pipelines.message"]
    assert KEY not in down.context["pipelines.message"]


async def test_a_model_that_writes_text_instead_of_calling_the_tool_is_still_guarded(tmp_path, llm_env) -> None:
    db = _shop(tmp_path / "shop.db")
    async with open_fake_openai([answer(content=_valid(db))]) as model:
        llm_env(model.url)
        result = await _run(db)
    assert result.status == "completed" and _blocks(result)[-1] == "compile"


async def test_the_contract_names_each_components_mode_and_config_keys(tmp_path, llm_env) -> None:
    # The guard holds a pipeline to each component's modes and config keys: the contract says them,
    # so a model need not guess (the seed's own example writes format: csv to a writer).
    db = _shop(tmp_path / "shop.db")
    async with open_fake_openai([answer(content=_valid(db))]) as model:
        llm_env(model.url)
        await _run(db)
    system = model.requests[0]["messages"][0]["content"]
    assert "  - csv.writer (mode: write; config keys: path, delimiter, header)\n" in system
    assert "  - sqlite.extractor (mode: read; config keys: query, database, connection, batch_rows, work_dir)\n" in system
    assert "dataset" not in system  # it flows through needs, never written


@pytest.mark.parametrize(("request_", "said"), [
    ({"format": "parquet"}, "no writer for the format 'parquet'"),
    ({"tables": ["invoices"]}, "has no table 'invoices' (its tables: users)"),
])
async def test_a_request_no_pipeline_can_meet_is_answered_before_the_model_is_asked(tmp_path, llm_env, request_,
                                                                                     said) -> None:
    db = _shop(tmp_path / "shop.db")
    async with open_fake_openai([answer(content=_valid(db))]) as model:  # a model that would answer csv, users
        llm_env(model.url)
        result = await arun_manifest(CHAT_FSM, CHAT_CAPABILITIES, inputs={
            REQUEST: {"source": str(db), **request_}, "pipelines.synthesizer": "llm"})
    assert _blocks(result)[-2:] == ["synthesize", "report_problem"] and model.requests == []
    assert said in result.context["pipelines.message"] and "pipelines.yaml" not in result.context
