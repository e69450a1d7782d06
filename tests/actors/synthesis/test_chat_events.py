"""Seed 003: a structured event for every transition of the chat state machine. Each path
through the machine is run; every block on it must have logged its state's event, and no event
carries a row, a path's content or a connection's value."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import msgspec
import pytest
from structlog.testing import capture_logs

from ontoflow import arun_manifest
from ontoflow.actors.synthesis import CHAT_CAPABILITIES, CHAT_FSM
from tests.support.fake_openai import open_fake_openai, tool_answer

REQUEST = "pipelines.request"

#: block -> the event it logs, whichever way it ends.
EVENT_OF = {
    "capture_intent": {"intent_captured", "intent_incomplete"},
    "ask_for_details": {"details_requested"},
    "discover": {"discovery_done", "discovery_failed"},
    "synthesize": {"oml_synthesis_start"},
    "validate": {"schema_guard_pass", "schema_guard_fail"},
    "regenerate": {"regeneration_attempt"},
    "validate_again": {"schema_guard_pass", "schema_guard_fail"},
    "compile": {"compile_start"},
    "hand_over": {"hitl_handover"},
    "report_problem": {"request_not_met"},
}


def _shop(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE users (id INTEGER, name TEXT)")
    db.execute("INSERT INTO users VALUES (1, 'Ada-Lovelace-row')")
    db.commit()
    db.close()
    return path


def _requests(tmp_path: Path) -> dict[str, dict[str, Any]]:
    shop = str(_shop(tmp_path / "shop.db"))
    return {
        "compiled": {"source": shop},
        "no_source": {"source": " "},
        "missing_database": {"source": str(tmp_path / "nowhere.db")},
        "unknown_table": {"source": shop, "tables": ["invoices"]},
        "handed_over": {"source": shop},  # the model's synthesiser, answering the legacy format twice
    }


@pytest.mark.anyio
@pytest.mark.parametrize("path", ["compiled", "no_source", "missing_database", "unknown_table", "handed_over"])
async def test_every_block_on_every_path_logs_its_event(path: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    request = _requests(tmp_path)[path]
    legacy = tool_answer("generate_pipeline", {"pipeline_yaml": "version: 1\nname: shop\ntasks: []\n"})
    async with open_fake_openai([legacy]) as model:
        monkeypatch.setenv("ONTOFLOW_LLM_URL", model.url)
        monkeypatch.setenv("ONTOFLOW_LLM_MODEL", "fake-model")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
        with capture_logs() as logs:
            result = await arun_manifest(CHAT_FSM, CHAT_CAPABILITIES, inputs={
                REQUEST: request, "pipelines.synthesizer": "llm" if path == "handed_over" else "deterministic"})
    assert result.status == "completed", result.error
    assert path != "handed_over" or result.trace[-1].block == "hand_over"
    names = [e["event"] for e in logs]
    for block in [e.block for e in result.trace]:
        assert EVENT_OF[block] & set(names), f"{path}: block {block} logged none of {sorted(EVENT_OF[block])}"
    text = msgspec.json.encode(logs, enc_hook=str).decode()
    assert "Ada-Lovelace-row" not in text


@pytest.mark.anyio
async def test_a_pipeline_with_thousands_of_errors_gets_a_concise_message_and_bounded_events(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shop = str(_shop(tmp_path / "shop.db"))
    broken = 'oml_version: "0.1.0"\nname: x\nsteps:\n' + "".join(f"  - id: S{i}\n" for i in range(400))
    async with open_fake_openai([tool_answer("generate_pipeline", {"pipeline_yaml": broken})]) as model:
        monkeypatch.setenv("ONTOFLOW_LLM_URL", model.url)
        monkeypatch.setenv("ONTOFLOW_LLM_MODEL", "fake-model")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
        with capture_logs() as logs:
            result = await arun_manifest(CHAT_FSM, CHAT_CAPABILITIES,
                                         inputs={REQUEST: {"source": shop}, "pipelines.synthesizer": "llm"})
    assert result.trace[-1].block == "hand_over"
    message = result.context["pipelines.message"]
    # id, component, mode, config of each step: 1,600, of which the run carries the first 50 and their count
    assert len(result.context["pipelines.guard_errors"]) == 51
    assert "steps[0].id, steps[0].component" in message and "and 1595 more" in message and len(message) < 500
    for event in logs:
        if event["event"] in ("schema_guard_fail", "regeneration_attempt"):
            assert event["errors"] == 1600 and len(event["paths"]) <= 20


@pytest.mark.anyio
async def test_a_path_made_of_a_huge_key_is_cut_short_in_the_message_and_the_events(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shop = str(_shop(tmp_path / "shop.db"))
    huge = "k" * 20_000
    broken = {"oml_version": "0.1.0", "name": "x", huge: 1}  # as a map: YAML caps a plain key at 1,024 characters
    async with open_fake_openai([tool_answer("generate_pipeline", {"pipeline_yaml": broken})]) as model:
        monkeypatch.setenv("ONTOFLOW_LLM_URL", model.url)
        monkeypatch.setenv("ONTOFLOW_LLM_MODEL", "fake-model")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
        with capture_logs() as logs:
            result = await arun_manifest(CHAT_FSM, CHAT_CAPABILITIES,
                                         inputs={REQUEST: {"source": shop}, "pipelines.synthesizer": "llm"})
    assert result.trace[-1].block == "hand_over" and len(result.context["pipelines.message"]) < 500
    for event in logs:
        if event["event"] in ("schema_guard_fail", "regeneration_attempt"):
            assert all(len(p) <= 83 for p in event["paths"]) and "k" * 80 + "..." in event["paths"]
