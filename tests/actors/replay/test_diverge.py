"""Replaying a run against a new version of its document: the first divergence, named."""

from __future__ import annotations

from pathlib import Path

import pytest

from ontoflow.actors.replay import ReplayInputError, compile_replacement, replay_journal, replay_run
from ontoflow.protocols.errors import ManifestError
from ontoflow.runtime.journal import open_journal_readonly
from tests.actors.replay.recording import plan, record, workflow


def _against(path: Path, document: dict, run_id: str = "r1"):
    with open_journal_readonly(path) as journal:
        source = journal.source(journal.run(run_id).source_hash)
        new = compile_replacement(source, document, origin="new.yaml")
        return replay_run(journal, run_id, new=new, against="new.yaml")


def test_the_same_decisions_under_a_new_version_are_no_divergence(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    record(path, workflow())
    newer = workflow()
    newer["nodes"]["main"]["blocks"]["spare"] = {"worker": "t.note"}  # reached by nothing
    one = _against(path, newer)
    assert one.matched and one.mismatch is None and one.against == "new.yaml" and one.facts == 4


def test_a_changed_transition_is_named_with_its_block_and_signal(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    record(path, workflow())
    one = _against(path, workflow(on_success="JUMP:note"))
    m = one.mismatch
    assert not one.matched and m is not None and m.what == "decisions"
    assert (m.fact_index, m.fact, m.step_id, m.block, m.signal) == (2, "step_finished", "s1", "main.load", "success")
    assert m.recorded == "route main.load: success -> CALL:sub; dispatch s2#1 t.work at sub.work"
    assert m.now == "route main.load: success -> JUMP:note; dispatch s2#1 t.note at main.note"


def test_a_changed_entry_diverges_at_the_submission(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    record(path, workflow())
    newer = workflow()
    newer["nodes"]["main"]["entry_block"] = "note"
    m = _against(path, newer).mismatch
    assert m is not None and (m.fact_index, m.fact, m.block) == (1, "run_submitted", "main.load")
    assert m.recorded == "dispatch s1#1 t.load at main.load" and m.now == "dispatch s1#1 t.note at main.note"


def test_a_plan_with_a_step_removed_diverges(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    record(path, plan())
    newer = plan()
    newer["steps"] = newer["steps"][:2]
    m = _against(path, newer).mismatch
    assert m is not None and m.fact_index == 2 and m.block == "a"
    assert "dispatch c#1 t.note" in m.recorded and "dispatch c#1" not in m.now


def test_a_document_of_another_kind_or_invalid_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    record(path, workflow())
    with pytest.raises(ReplayInputError, match="is a plan, the run ran a workflow"):
        _against(path, plan())
    broken = workflow(on_success="JUMP:nowhere")
    with pytest.raises(ManifestError, match="nowhere"):
        _against(path, broken)


def test_all_runs_of_the_new_documents_name_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    record(path, workflow(), run_id="r1")
    record(path, plan(), run_id="r2")
    record(path, workflow(), run_id="r3", events={"t.load": "empty"})
    with open_journal_readonly(path) as journal:
        new = compile_replacement(journal.source(journal.run("r1").source_hash), workflow(on_success="JUMP:note"))
        summary = replay_journal(journal, new=new)
    assert [r.run_id for r in summary.runs] == ["r1", "r3"] and summary.skipped == 1
    assert (summary.matched, summary.mismatched) == (1, 1)  # r3 took "empty", which did not change


class _Forgetful:
    """The new version, but one that holds nothing in flight (a pure stand-in: the same
    decisions, so only the in-flight check can tell)."""

    def __init__(self, engine) -> None:
        self._engine = engine
        self.kind, self.name = engine.kind, engine.name

    def new_run(self, run_id):
        return self._engine.new_run(run_id)

    def advance(self, state, fact):
        return self._engine.advance(state, fact)

    def in_flight(self, state):
        return []


def test_an_outcome_for_an_attempt_the_new_version_never_dispatched_is_the_divergence(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    record(path, workflow())
    with open_journal_readonly(path) as journal:
        new = _Forgetful(compile_replacement(journal.source(journal.run("r1").source_hash), workflow()))
        one = replay_run(journal, "r1", new=new, against="new.yaml")
    m = one.mismatch
    assert m is not None and m.what == "outcome" and (m.fact_index, m.step_id, m.block) == (2, "s1", "main.load")
    assert m.recorded == "s1#1 was in flight" and m.now.startswith("the new version never dispatched s1#1")
