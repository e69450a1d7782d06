"""Durability on its own: what one commit holds, finding runs, and recovery by replay."""

from __future__ import annotations

from pathlib import Path

import pytest

from ontoflow.actors.orchestrator import Durability, Run, RunTable, encode_source
from ontoflow.actors.orchestrator.engine import Dispatch, RunSubmitted, StepLost
from ontoflow.runtime.journal import JournalError, RunRow, open_journal

from tests.actors.orchestrator.parts import CAP, one_step

DOCUMENT = {"start": "m", "nodes": {"m": {"entry_block": "a", "blocks": {"a": {"worker": CAP.id}}}}}


def _journal_one_run(durability: Durability, *, dispatched: bool) -> None:
    workflow = one_step()
    source = encode_source(DOCUMENT, workflow)
    run = Run(workflow, "r1", source[0])
    durability.submitted(RunRow(run_id="r1", source_hash=source[0], submitted_ms=0, idempotency_key="k"), source)
    fact = RunSubmitted(run_id="r1", inputs={}, now_ms=0)
    durability.fact("r1", fact)
    [d] = run.advance(run.state, fact)
    if dispatched:
        durability.dispatched(run, d, "w1", 1)


def test_nothing_reaches_the_journal_before_commit_and_one_commit_holds_it_all(tmp_path: Path) -> None:
    with open_journal(tmp_path / "j.sqlite") as journal:
        durability = Durability(journal)
        _journal_one_run(durability, dispatched=True)
        assert journal.run("r1") is None and not durability.exists("r1")
        before = journal.commits
        durability.commit()
        durability.commit()  # nothing new: no transaction
        assert journal.commits == before + 1
        assert durability.exists("r1") and durability.find(idempotency_key="k") == "r1"


def test_recovery_replays_and_reports_an_attempt_that_may_have_run_as_interrupted(tmp_path: Path) -> None:
    with open_journal(tmp_path / "j.sqlite") as journal:
        writer = Durability(journal)
        _journal_one_run(writer, dispatched=True)
        writer.commit()
        table, lost, sent = RunTable(), [], []
        report = Durability(journal).recover(
            50, adopt=lambda run, row: table.add(run), lost=lambda run, fact: lost.append(fact),
            dispatch=lambda d, now: sent.append(d))
    assert report.runs == 1 and report.interrupted == 1 and report.redispatched == 0
    [fact] = lost
    assert isinstance(fact, StepLost) and fact.reason == "interrupted" and fact.now_ms == 50
    assert table.live("r1") is not None and sent == []


def test_recovery_dispatches_an_attempt_never_sent(tmp_path: Path) -> None:
    with open_journal(tmp_path / "j.sqlite") as journal:
        writer = Durability(journal)
        _journal_one_run(writer, dispatched=False)
        writer.commit()
        sent: list[Dispatch] = []
        report = Durability(journal).recover(50, adopt=lambda run, row: None, lost=lambda run, fact: None,
                                             dispatch=lambda d, now: sent.append(d))
    assert report.redispatched == 1 and [d.run_id for d in sent] == ["r1"]


def test_without_a_journal_nothing_is_recorded() -> None:
    durability = Durability(None)
    durability.commit()
    assert durability.find(idempotency_key="k") is None and not durability.exists("r1")
    assert durability.recover(0, adopt=None, lost=None, dispatch=None).runs == 0  # type: ignore[arg-type]


def test_a_batch_whose_commit_fails_is_kept_and_committed_first_by_the_next_commit(tmp_path: Path) -> None:
    with open_journal(tmp_path / "j.sqlite") as journal:
        durability = Durability(journal)
        durability.commit()
        conn = journal._conn  # SQLite's own page limit: a real "database or disk is full"
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")
        _journal_one_run(durability, dispatched=True)
        durability.fact("r1", RunSubmitted(run_id="r1", inputs={"pad": "x" * 100_000}, now_ms=2))  # needs new pages
        with pytest.raises(JournalError, match="full"):
            durability.commit()
        assert journal.run("r1") is None and durability.uncommitted("r1") and not durability.uncommitted("r2")
        durability.fact("r1", RunSubmitted(run_id="r1", inputs={"later": 1}, now_ms=5))  # joins, after it
        with pytest.raises(JournalError):
            durability.commit()
        conn.execute("PRAGMA max_page_count = 1073741823")  # space returns
        durability.commit()
        assert not durability.uncommitted("r1")
        assert [(f.kind, f.at_ms) for f in journal.facts("r1")] == [("fact", 0), ("dispatched", 1), ("fact", 2), ("fact", 5)]
