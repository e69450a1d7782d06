"""Replaying journaled runs: every recorded decision is checked, and a wrong one is named."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ontoflow.actors.orchestrator import compile_document, encode_source
from ontoflow.actors.replay import UNRESOLVED, RunNotFoundError, context_digest, replay_journal, replay_run
from ontoflow.runtime.journal import open_journal_readonly
from tests.actors.replay.recording import CATALOG, plan, record, workflow


def _replay(path: Path, run_id: str = "r1"):
    with open_journal_readonly(path) as journal:
        return replay_run(journal, run_id)


def test_a_workflow_with_call_and_return_replays_every_decision(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    record(path, workflow())
    one = _replay(path)
    assert one.matched and one.mismatch is None and one.error is None
    assert (one.kind, one.name, one.status, one.status_now) == ("workflow", "rec", "completed", "completed")
    assert (one.facts, one.dispatches, one.unsent) == (4, 3, 0)  # submitted + load, work, note
    assert len(one.context_sha256) == 64


def test_a_plan_replays_every_decision(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    record(path, plan())
    one = _replay(path)
    assert one.matched and one.kind == "plan" and one.dispatches == 3


def test_a_failed_run_replays_to_the_same_error(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    record(path, workflow(), events={"t.load": "failure"})
    one = _replay(path)
    assert one.matched and one.status_now == "failed"
    assert "load" in (one.error_now or "") and "failure" in (one.error_now or "")


def test_an_unfinished_run_replays_as_running(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    record(path, workflow(), stop_after=1)
    one = _replay(path)
    assert one.matched and one.status == one.status_now == "running"


def test_the_context_digest_is_of_the_deterministic_encoding() -> None:
    assert context_digest({"b": 1, "a": [1, 2]}) == context_digest({"a": [1, 2], "b": 1})
    assert context_digest({"a": 1}) != context_digest({"a": 2})


def test_a_dispatch_to_another_capability_is_a_mismatch(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"

    def wrong(d):
        return (d.step_id, d.attempt, "t.other" if d.step_id == "s2" else d.capability, "w1")

    record(path, workflow(), tamper=wrong)
    one = _replay(path)
    assert not one.matched
    m = one.mismatch
    assert m is not None and m.what == "dispatch" and m.step_id == "s2"
    assert m.fact_index == 2 and m.fact == "step_finished" and m.signal == "success"
    assert m.recorded == "dispatch s2#1 t.other" and m.now == "dispatch s2#1 t.work"


def test_a_dispatch_the_engine_never_decided_is_a_mismatch(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    record(path, workflow(), tamper=lambda d: (d.step_id, d.attempt + 1, d.capability, "w1"))
    m = _replay(path).mismatch
    assert m is not None and m.what == "dispatch" and m.fact_index == 1
    assert m.now == "no dispatch of s1#2 was decided"


def test_a_recorded_end_the_engine_does_not_reach_is_a_mismatch(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    record(path, workflow())
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE runs SET status = 'failed'")
    conn.close()
    m = _replay(path).mismatch
    assert m is not None and (m.what, m.recorded, m.now) == ("end", "status failed", "status completed")
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE runs SET status = 'completed', ended_ms = ended_ms + 1")
    conn.close()
    m = _replay(path).mismatch
    assert m is not None and m.what == "end" and "ended at" in m.recorded


def test_a_run_not_in_the_journal_is_an_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    record(path, workflow())
    with pytest.raises(RunNotFoundError, match="run nope is not in journal"):
        _replay(path, "nope")


def test_every_run_is_replayed_and_one_that_cannot_be_is_counted(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    record(path, workflow(), run_id="r1")
    record(path, plan(), run_id="r2")
    record(path, workflow(), run_id="r3", tamper=lambda d: (d.step_id, d.attempt, "t.other", "w1"))
    compiled = compile_document(plan(), CATALOG)
    plan_hash, _ = encode_source(plan(), compiled, kind="plan")
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM sources WHERE hash = ?", (plan_hash,))
    conn.close()
    with open_journal_readonly(path) as journal:
        summary = replay_journal(journal)
    assert [r.run_id for r in summary.runs] == ["r1", "r2", "r3"]
    assert (summary.matched, summary.mismatched, summary.failed, summary.ok) == (1, 1, 1, False)
    assert "pinned source" in (summary.runs[1].error or "")


def test_connections_stay_unresolved() -> None:
    assert UNRESOLVED["default"] == "@default" and "anything" in UNRESOLVED and bool(UNRESOLVED)


def test_runs_still_in_flight_are_counted_apart_among_the_matched(tmp_path: Path) -> None:
    # A CI job replaying a live journal read "2 matched" for one ended run and one whose end
    # was still to come: nothing told it that one run's end had not been checked.
    path = tmp_path / "j.sqlite"
    record(path, workflow(), run_id="r1")
    record(path, workflow(), run_id="r2", stop_after=1)
    with open_journal_readonly(path) as journal:
        summary = replay_journal(journal)
    assert (summary.matched, summary.in_flight, summary.ok) == (2, 1, True)
