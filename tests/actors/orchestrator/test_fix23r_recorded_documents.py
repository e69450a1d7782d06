"""A run journaled before a rule that refuses its document now is recovered and runs to its end,
and ``ontoflow replay`` replays it; the same document submitted fresh is refused (fix23r).

Before: a daemon recompiles each run in flight from its journaled document with
``recorded=True``, which only the workflow loader honoured (its id and merge-reference rules).
A plan step giving lists for two fan-out rules, a pipeline giving a setting under both its
names, a pipeline named with a final newline or described past 64 KiB, a workflow of more than
50,000 transitions (all accepted before this version) were refused again: ``Durability.recover``
logged ``run_unrecoverable`` and the run stayed ``running`` for ever.

The journal is written as an older daemon wrote it: the source bytes by hand (not compiled by
this version), the submit's fact, nothing dispatched yet.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
from structlog.testing import capture_logs

from ontoflow.actors.orchestrator import Durability, Run, WorkflowSource, compile_document
from ontoflow.actors.orchestrator.engine import Dispatch, RunEnded, RunSubmitted, StepFinished
from ontoflow.protocols import ArrayParam, CapabilityMetadata, Decomposition, ManifestError, Outcome, check_oml
from ontoflow.runtime.journal import RunRow, open_journal


def _cap(cap_id: str, *inputs: str, outputs: tuple[str, ...] = (), **fields: Any) -> CapabilityMetadata:
    schema = {"type": "object", "properties": {k: {} for k in inputs}}
    return CapabilityMetadata(id=cap_id, input_schema=schema, outputs=list(outputs), **fields)


_EVENTS = [f"e{k}" for k in range(10)]
_RULES = [ArrayParam(param_name="t.as", single_param_name="t.a", max_concurrency=4),
          ArrayParam(param_name="t.bs", single_param_name="t.b", max_concurrency=4)]
CATALOG = {c.id: c for c in [
    _cap("t.pair", "t.a", "t.b", outputs=("t.v",), decomposition=Decomposition(array_params=_RULES)),
    _cap("t.note", outputs=("t.noted",)),
    _cap("t.read", "t.query", outputs=("t.rows",), flow={"modes": ["read"]}),
    _cap("t.write", "t.rows", "data.path", outputs=("t.written",), flow={"modes": ["write"]}),
    CapabilityMetadata(id="x.a", events=["success", "failure", *_EVENTS]),
]}

TWO_LISTS = {"name": "pairs", "steps": [
    {"id": "r", "capability": "t.pair", "params": {"t.as": [1, 2], "t.bs": [3, 4]}},
    {"id": "s", "capability": "t.note", "depends_on": ["r"]},
]}


def _pipeline(name: str = "ship-rows", **write: Any) -> dict[str, Any]:
    return {"oml_version": "0.1.0", "name": name, "steps": [
        {"id": "read-rows", "component": "t.read", "mode": "read", "config": {"query": "q"}},
        {"id": "write-rows", "component": "t.write", "mode": "write", "needs": ["read-rows"],
         "config": write or {"path": "./a.csv"}}]}


SETTING_TWICE = _pipeline(**{"path": "./a.csv", "data.path": "./b.csv"})
NEWLINE_NAME = _pipeline("ship-rows\n")
LONG_DESCRIPTION = {**_pipeline(), "description": "x" * 70_000}


def _many_transitions() -> dict[str, Any]:
    """4,600 blocks of 11 routes each (50,600): only ``b0`` and ``end`` run."""
    blocks = {f"b{i}": {"worker": "x.a", "transitions": [{"on_signal": s, "action": f"JUMP:b{i - 1}" if i else "JUMP:end"}
                                                        for s in ["success", *_EVENTS]]} for i in range(4_600)}
    blocks["end"] = {"worker": "x.a"}
    return {"name": "big", "start": "m", "nodes": {"m": {"entry_block": "b0", "blocks": blocks}}}


DOCUMENTS = {
    "plan-two-fan-out-lists": ("plan", TWO_LISTS),
    "pipeline-setting-twice": ("pipeline", SETTING_TWICE),
    "pipeline-name-newline": ("pipeline", NEWLINE_NAME),
    "pipeline-long-description": ("pipeline", LONG_DESCRIPTION),
    "workflow-50600-transitions": ("workflow", _many_transitions()),
}


def _journal_as_before(path: Path, kind: str, document: dict[str, Any], run_id: str = "r1") -> None:
    """A run in flight as an older daemon journaled it: its source and its submit, no dispatch."""
    body = msgspec.msgpack.encode(WorkflowSource(manifest=document, catalog=dict(sorted(CATALOG.items())), kind=kind))
    source_hash = hashlib.sha256(body).hexdigest()
    with open_journal(path) as journal:
        writer = Durability(journal)
        writer.submitted(RunRow(run_id=run_id, source_hash=source_hash, submitted_ms=0), (source_hash, body))
        writer.fact(run_id, RunSubmitted(run_id=run_id, inputs={}, now_ms=0))
        writer.commit()


def _recover_and_finish(path: Path) -> tuple[list[Run], list[Dispatch], str | None, Any]:
    """Recover ``path``'s runs as a new daemon does, then answer every dispatch ``success``,
    journaling each fact and dispatch; the runs, every dispatch, the first run's end, the report."""
    runs: list[Run] = []
    queue: list[Dispatch] = []
    ended: str | None = None
    with open_journal(path) as journal:
        durability = Durability(journal)
        report = durability.recover(10, adopt=lambda run, row: runs.append(run), lost=lambda run, fact: None,
                                    dispatch=lambda d, now: queue.append(d))
        sent, now = list(queue), 10
        while queue:
            d = queue.pop(0)
            run = next(r for r in runs if r.run_id == d.run_id)
            durability.dispatched(run, d, "w1", now)
            now += 7
            outputs = {key: d.step_id for key in CATALOG[d.capability].outputs}
            fact = StepFinished(outcome=Outcome(run_id=d.run_id, step_id=d.step_id, attempt=d.attempt, event="success",
                                                outputs=outputs), now_ms=now)
            durability.fact(d.run_id, fact)
            for command in run.advance(run.state, fact):
                if isinstance(command, Dispatch):
                    queue.append(command)
                    sent.append(command)
                elif isinstance(command, RunEnded):
                    durability.ended(command.run_id, command.status, now)
                    ended = command.status
        durability.commit()
    return runs, sent, ended, report


@pytest.mark.parametrize("name", list(DOCUMENTS))
def test_a_journaled_run_whose_document_a_new_rule_refuses_is_recovered_and_runs_to_its_end(tmp_path: Path,
                                                                                              name: str) -> None:
    kind, document = DOCUMENTS[name]
    with pytest.raises(ManifestError):  # a fresh submit is held to the new rule
        compile_document(document, CATALOG, kind=kind)
    path = tmp_path / "j.sqlite"
    _journal_as_before(path, kind, document)
    with capture_logs() as logs:
        runs, sent, ended, report = _recover_and_finish(path)
    assert [e for e in logs if e["event"] == "run_unrecoverable"] == []
    assert report.unrecoverable == 0 and report.runs == 1 and report.redispatched >= 1
    assert ended == "completed" and len(runs) == 1
    with open_journal(path) as journal:
        assert journal.unfinished() == []
        assert journal.run("r1").status == "completed"


def test_a_recovered_plan_drops_the_second_list_as_it_did_when_it_was_accepted(tmp_path: Path) -> None:
    """The step fans out over ``t.as``; ``t.bs`` (no input of ``t.pair``) reaches no child, and
    the step's start does not fail it either (the run-time rule is spared with the compile-time one)."""
    path = tmp_path / "j.sqlite"
    _journal_as_before(path, "plan", TWO_LISTS)
    _, sent, ended, _ = _recover_and_finish(path)
    assert [(d.step_id, d.inputs) for d in sent] == [("r[0]", {"t.a": 1}), ("r[1]", {"t.a": 2}), ("s", {})]
    assert ended == "completed"


def test_a_recovered_pipeline_takes_the_setting_given_last_as_it_did(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    _journal_as_before(path, "pipeline", SETTING_TWICE)
    _, sent, _, _ = _recover_and_finish(path)
    write = next(d for d in sent if d.capability == "t.write")
    assert write.inputs["data.path"] == "./b.csv"


def test_an_older_pipeline_connection_ending_in_a_newline_is_checked_as_it_was() -> None:
    document = _pipeline()
    document["steps"][0]["config"]["connection"] = "@db\n"
    assert [p.path for p in check_oml(document)] == ["steps[0].config.connection"]
    assert check_oml(document, recorded=True) == []


def test_ontoflow_replay_replays_a_recovered_run_of_each_document(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    for i, (kind, document) in enumerate(DOCUMENTS.values()):
        _journal_as_before(path, kind, document, run_id=f"r{i}")
    _, _, _, report = _recover_and_finish(path)
    assert report.runs == len(DOCUMENTS) and report.unrecoverable == 0
    env = {**os.environ, "NO_COLOR": "1"}
    done = subprocess.run([sys.executable, "-m", "ontoflow", "replay", "--journal", str(path), "--all", "--json"],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    runs = summary["runs"]
    assert len(runs) == len(DOCUMENTS)
    assert all(r["matched"] and r["status"] == r["status_now"] == "completed" for r in runs), runs
