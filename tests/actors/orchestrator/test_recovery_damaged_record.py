"""A damaged dispatch record makes its run unrecoverable, not the daemon's start (found by
harden11).

Recovery decoded each run's ``dispatched`` records outside its guard ("one bad run must not
keep every other one down"): one record that does not decode (a damaged row) raised
``msgspec.DecodeError`` out of ``Durability.recover``, and ``ontoflow daemon`` died at start
with a traceback, every other run with it. Now that run is ``run_unrecoverable`` (logged with
a ``JournalCorruptError`` naming the run and the row) and the others recover; a fact that does
not decode is the same error when a query replays its run (it was msgspec's ``DecodeError``).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from ontoflow.actors.orchestrator import Durability, Run, RunTable, encode_source
from ontoflow.actors.orchestrator.engine import RunSubmitted
from ontoflow.runtime.journal import JournalCorruptError, RunRow, open_journal

from tests.actors.orchestrator.parts import CAP, one_step

DOCUMENT = {"start": "m", "nodes": {"m": {"entry_block": "a", "blocks": {"a": {"worker": CAP.id}}}}}


def _journal_dispatched_run(durability: Durability, run_id: str, dispatched_at: int = 1) -> None:
    workflow = one_step()
    source = encode_source(DOCUMENT, workflow)
    run = Run(workflow, run_id, source[0])
    durability.submitted(RunRow(run_id=run_id, source_hash=source[0], submitted_ms=0), source)
    fact = RunSubmitted(run_id=run_id, inputs={}, now_ms=0)
    durability.fact(run_id, fact)
    [d] = run.advance(run.state, fact)
    durability.dispatched(run, d, "w1", dispatched_at)


def test_a_dispatch_record_that_does_not_decode_loses_its_run_only(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    with open_journal(path) as journal:
        writer = Durability(journal)
        _journal_dispatched_run(writer, "bad")
        _journal_dispatched_run(writer, "good")
        writer.commit()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE facts SET body = x'c1c1' WHERE run_id = 'bad' AND kind = 'dispatched'")
    conn.commit()
    conn.close()
    with open_journal(path) as journal, capture_logs() as logs:
        table, lost = RunTable(), []
        report = Durability(journal).recover(
            50, adopt=lambda run, row: table.add(run), lost=lambda run, fact: lost.append((run.run_id, fact)),
            dispatch=lambda d, now: None)
    assert report.unrecoverable == 1 and report.runs == 1 and report.interrupted == 1
    assert table.live("good") is not None and table.live("bad") is None
    assert [run_id for run_id, _ in lost] == ["good"]
    [refused] = [e for e in logs if e["event"] == "run_unrecoverable"]
    assert refused["run_id"] == "bad" and refused["error"] == "JournalCorruptError"
    assert refused["detail"] == (f"journal {path}: run 'bad': its fact row 1 (kind 'dispatched') does not decode; "
                                 "the journal is damaged")


def test_a_fact_that_does_not_decode_is_a_corrupt_journal_naming_the_run_and_the_row(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    with open_journal(path) as journal:
        writer = Durability(journal)
        _journal_dispatched_run(writer, "bad")
        writer.commit()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE facts SET body = x'92c1' WHERE run_id = 'bad' AND kind = 'fact'")
    conn.commit()
    conn.close()
    with open_journal(path) as journal:
        durability = Durability(journal)
        with pytest.raises(JournalCorruptError) as caught:
            durability.replay(journal.run("bad"), journal.facts("bad"), {})
    assert str(caught.value) == (f"journal {path}: run 'bad': its fact row 0 (kind 'fact') does not decode; "
                                 "the journal is damaged")


def test_a_group_row_that_does_not_decode_loses_its_run_only(tmp_path: Path) -> None:
    # A run's submission and its first dispatch at one time are one ``group`` row (schema 5).
    # Its body damaged, the read of every unfinished run's facts refused it, and the daemon's
    # start with it, every other run too. Now that run is unrecoverable, as with a damaged fact.
    path = tmp_path / "j.sqlite"
    with open_journal(path) as journal:
        writer = Durability(journal)
        _journal_dispatched_run(writer, "bad", dispatched_at=0)
        _journal_dispatched_run(writer, "good", dispatched_at=0)
        writer.commit()
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT count(*) FROM facts WHERE kind = 'group'").fetchone()[0] == 2
    conn.execute("UPDATE facts SET body = x'c1c1' WHERE run_id = 'bad' AND kind = 'group'")
    conn.commit()
    conn.close()
    with open_journal(path) as journal, capture_logs() as logs:
        table, lost = RunTable(), []
        report = Durability(journal).recover(
            50, adopt=lambda run, row: table.add(run), lost=lambda run, fact: lost.append((run.run_id, fact)),
            dispatch=lambda d, now: None)
        with pytest.raises(JournalCorruptError) as caught:  # a query of the run still names the row
            journal.facts("bad")
    assert report.unrecoverable == 1 and report.runs == 1 and report.interrupted == 1
    assert table.live("good") is not None and table.live("bad") is None
    [refused] = [e for e in logs if e["event"] == "run_unrecoverable"]
    assert refused["detail"] == (f"journal {path}: run 'bad': its fact row 0 (kind 'group') does not decode; "
                                 "the journal is damaged")
    assert "not a group of facts" in str(caught.value) and "c1" not in str(caught.value).lower()
