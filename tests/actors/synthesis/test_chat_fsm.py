"""Seed 003's chat state machine: its hard rules read off the transition table, then run.

The table is the shipped manifest, run by the workflow engine; the rules are properties of its
graph (what can follow what), so a change that breaks one fails here before any run.
"""

from __future__ import annotations

import sqlite3
from collections import deque
from pathlib import Path
from typing import Any, ClassVar

import msgspec
import pytest
from structlog.testing import capture_logs

from ontoflow import Capability, Result, run_manifest
from ontoflow.actors.synthesis import CHAT_CAPABILITIES, CHAT_FSM, RegeneratePipeline, SynthesizePipeline
from ontoflow.protocols.manifest import decode_document, manifest_from_data

REQUEST = "pipelines.request"


def _graph() -> dict[str, dict[str, str]]:
    """block -> {signal: next block} of the shipped state machine."""
    manifest = manifest_from_data(decode_document(CHAT_FSM.read_bytes(), "yaml"), source=str(CHAT_FSM))
    (node,) = manifest.nodes.values()
    graph = {}
    for name, block in node.blocks.items():
        graph[name] = {t.on_signal: t.action.split(":", 1)[1] for t in block.transitions}
        assert all(t.action.startswith("JUMP:") for t in block.transitions)
    return graph


def _reachable(graph: dict[str, dict[str, str]], start: str) -> set[str]:
    seen, todo = {start}, deque([start])
    while todo:
        for nxt in graph[todo.popleft()].values():
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_after_discovery_no_path_leads_to_an_open_question() -> None:
    graph = _graph()
    assert "ask_for_details" in _reachable(graph, "capture_intent")
    assert "ask_for_details" not in _reachable(graph, "discover")
    assert graph["discover"]["success"] == "synthesize"  # straight to synthesis


def test_a_second_invalid_pipeline_goes_to_a_person_never_to_a_third_generation() -> None:
    graph = _graph()
    assert graph["validate"]["fail"] == "regenerate"
    assert graph["validate_again"] == {"pass": "compile", "fail": "hand_over"}
    # No cycle anywhere: every path generates at most twice (synthesize, then regenerate once).
    order: list[str] = []
    marks: dict[str, int] = {}

    def visit(block: str) -> None:
        assert marks.get(block) != 1, f"a cycle through {block}"
        if marks.get(block) == 2:
            return
        marks[block] = 1
        for nxt in graph[block].values():
            visit(nxt)
        marks[block] = 2
        order.append(block)

    visit("capture_intent")
    assert "synthesize" not in _reachable(graph, "regenerate")
    assert "regenerate" not in _reachable(graph, "validate_again")
    assert graph["hand_over"] == {}  # the machine ends there: what follows is the person's answer
    generations = [b for b in order if b in ("synthesize", "regenerate")]
    assert len(generations) == 2  # the only two blocks that generate, each on at most one path step


def _shop(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE users (id INTEGER, name TEXT)")
    db.executemany("INSERT INTO users VALUES (?, ?)", [(1, "Ada"), (2, "Grace")])
    db.execute("CREATE TABLE orders (id INTEGER, total REAL)")
    db.commit()
    db.close()
    return path


def test_a_request_runs_through_the_machine_to_a_compiled_pipeline(tmp_path: Path) -> None:
    shop = _shop(tmp_path / "shop.db")
    with capture_logs() as logs:
        result = run_manifest(CHAT_FSM, CHAT_CAPABILITIES, inputs={REQUEST: {"source": str(shop), "format": "csv"}})
    assert result.status == "completed", result.error
    assert [e.block for e in result.trace] == ["capture_intent", "discover", "synthesize", "validate", "compile"]
    text = result.context["pipelines.yaml"]
    assert text.startswith("oml_version: 0.1.0\n") and "sqlite.extractor" in text and "csv.writer" in text
    events = [e["event"] for e in logs]
    for name in ("intent_captured", "discovery_done", "oml_synthesis_start", "oml_synthesis_complete",
                 "schema_guard_pass", "compile_start", "compile_complete"):
        assert name in events


def test_a_request_without_a_source_asks_for_it_before_discovery(tmp_path: Path) -> None:
    result = run_manifest(CHAT_FSM, CHAT_CAPABILITIES, inputs={REQUEST: {"source": " "}})
    assert [e.block for e in result.trace] == ["capture_intent", "ask_for_details"]
    assert "Which SQLite database" in result.context["pipelines.message"]


def test_a_table_discovery_did_not_find_ends_with_what_is_missing(tmp_path: Path) -> None:
    shop = _shop(tmp_path / "shop.db")
    result = run_manifest(CHAT_FSM, CHAT_CAPABILITIES,
                          inputs={REQUEST: {"source": str(shop), "tables": ["invoices"]}})
    assert [e.block for e in result.trace][-1] == "report_problem"
    assert result.context["pipelines.message"].endswith("has no table 'invoices' (its tables: orders, users)")
    assert "pipelines.yaml" not in result.context and "pipelines.document" not in result.context
    missing = run_manifest(CHAT_FSM, CHAT_CAPABILITIES, inputs={REQUEST: {"source": "@nowhere"}})
    assert "connection @nowhere is not configured" in missing.context["pipelines.message"]
    absent = run_manifest(CHAT_FSM, CHAT_CAPABILITIES, inputs={REQUEST: {"source": str(tmp_path / "no.db")}})
    assert absent.context["pipelines.message"].endswith("no.db does not exist")
    parquet = run_manifest(CHAT_FSM, CHAT_CAPABILITIES, inputs={REQUEST: {"source": str(shop), "format": "parquet"}})
    assert "no writer for the format 'parquet'" in parquet.context["pipelines.message"]


LEGACY: dict[str, Any] = {"version": "1", "name": "x", "tasks": [], "connectors": []}


class LegacySynthesis(Capability):
    """A synthesiser that keeps writing the legacy format (a model that ignores the contract)."""

    metadata: ClassVar = SynthesizePipeline.metadata
    calls: ClassVar[list[str]] = []

    async def execute(self, inputs: dict[str, Any], context: Any) -> Result:
        LegacySynthesis.calls.append(type(self).metadata.id)
        return Result(outputs={"pipelines.document": LEGACY})


class LegacyRegeneration(LegacySynthesis):
    metadata: ClassVar = RegeneratePipeline.metadata


def test_two_invalid_pipelines_reach_a_person_after_one_regeneration(tmp_path: Path) -> None:
    shop = _shop(tmp_path / "shop.db")
    caps = [c for c in CHAT_CAPABILITIES if c not in (SynthesizePipeline, RegeneratePipeline)]
    with capture_logs() as logs:
        result = run_manifest(CHAT_FSM, [*caps, LegacySynthesis, LegacyRegeneration],
                              inputs={REQUEST: {"source": str(shop)}})
    assert [e.block for e in result.trace] == [
        "capture_intent", "discover", "synthesize", "validate", "regenerate", "validate_again", "hand_over"]
    assert LegacySynthesis.calls == ["pipelines.synthesize", "pipelines.regenerate"]  # never a third
    assert "still wrong after one correction" in result.context["pipelines.message"]
    fails = [e for e in logs if e["event"] == "schema_guard_fail"]
    assert len(fails) == 2 and "tasks" in fails[0]["paths"] and "version" in fails[0]["paths"]
    assert not any("Ada" in msgspec.json.encode(e, enc_hook=str).decode() for e in logs)


@pytest.mark.parametrize("destination", ["notafolder", "notafolder/deeper"])
def test_a_destination_that_is_a_file_ends_with_what_is_wrong_not_a_pipeline_that_fails(
        tmp_path: Path, destination: str) -> None:
    shop = _shop(tmp_path / "shop.db")
    (tmp_path / "notafolder").write_text("a file, not a folder")
    result = run_manifest(CHAT_FSM, CHAT_CAPABILITIES, inputs={
        REQUEST: {"source": str(shop), "destination": str(tmp_path / destination)}})
    assert [e.block for e in result.trace][-2:] == ["synthesize", "report_problem"]
    assert result.context["pipelines.message"].endswith(f"{tmp_path / 'notafolder'} is a file, not a folder")
    assert "pipelines.yaml" not in result.context


@pytest.mark.parametrize("request_", [{"source": 5}, {"source": "./shop.db", "tables": "users"}, {"tables": ["x"]}])
def test_a_malformed_request_ends_in_an_answer_that_names_what_is_wrong(request_: dict) -> None:
    result = run_manifest(CHAT_FSM, CHAT_CAPABILITIES, inputs={REQUEST: request_})
    assert result.status == "completed", result.error  # the machine answers; it does not fail
    assert [e.block for e in result.trace] == ["capture_intent", "report_problem"]
    assert "pipelines.request" in result.context["pipelines.message"]


def test_every_block_that_can_fail_unexpectedly_has_a_way_to_an_answer() -> None:
    graph = _graph()
    for block in ("capture_intent", "discover", "synthesize", "regenerate"):
        assert graph[block]["SIGNAL:FAIL_DEFAULT"] == "report_problem", block


def test_the_shipped_machine_passes_the_contract_checker() -> None:
    from ontoflow.actors.checker import check_document

    report = check_document(decode_document(CHAT_FSM.read_bytes(), "yaml"),
                            {c.metadata.id: c.metadata for c in CHAT_CAPABILITIES}, name=str(CHAT_FSM))
    assert report.ok, [f for f in report.findings if f.severity == "error"]
