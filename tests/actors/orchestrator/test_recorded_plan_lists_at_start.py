"""A recorded plan (journaled before the rule) is spared the second fan-out list also when the
list comes at the step's start, from the run's inputs or a reference: fix23r spared only a list
written in the plan, and such a step was failed ``fan_out`` at recovery (review23b). A fresh
plan is still refused there."""

from __future__ import annotations

import hashlib
from pathlib import Path

import msgspec

from ontoflow.actors.orchestrator import Durability, WorkflowSource, compile_document
from ontoflow.actors.orchestrator.engine import RunEnded, RunSubmitted
from ontoflow.runtime.journal import RunRow, open_journal
from tests.actors.orchestrator.test_fix23r_recorded_documents import CATALOG, _recover_and_finish

ONE_LIST = {"name": "pairs", "steps": [{"id": "r", "capability": "t.pair", "params": {"t.as": [1, 2]}}]}


def test_a_recorded_plans_second_list_from_the_inputs_is_dropped_as_before(tmp_path: Path) -> None:
    body = msgspec.msgpack.encode(WorkflowSource(manifest=ONE_LIST, catalog=dict(sorted(CATALOG.items())), kind="plan"))
    source_hash = hashlib.sha256(body).hexdigest()
    path = tmp_path / "j.sqlite"
    with open_journal(path) as journal:
        writer = Durability(journal)
        writer.submitted(RunRow(run_id="r1", source_hash=source_hash, submitted_ms=0), (source_hash, body))
        writer.fact("r1", RunSubmitted(run_id="r1", inputs={"t.bs": [3, 4]}, now_ms=0))
        writer.commit()
    _, sent, ended, report = _recover_and_finish(path)
    assert report.unrecoverable == 0 and ended == "completed"
    assert sorted(d.inputs.get("t.a") for d in sent if d.capability == "t.pair") == [1, 2]


def test_a_fresh_plan_is_still_refused_the_second_list_at_its_start() -> None:
    engine = compile_document(ONE_LIST, CATALOG, kind="plan")
    state = engine.new_run("fresh")
    commands = engine.advance(state, RunSubmitted(run_id="fresh", inputs={"t.bs": [3, 4]}, now_ms=0))
    [end] = [c for c in commands if isinstance(c, RunEnded)]
    assert end.status == "failed" and state.trace[-1].reason == "fan_out", state.error
