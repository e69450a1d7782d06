"""Idempotency and trigger keys in the journal: unique among the runs that have one, in a journal
created now (partial unique indexes) and in one created before (UNIQUE columns), which opens,
recovers and refuses a key taken just the same."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import ontoflow.runtime.journal._open as open_module
from ontoflow.actors.orchestrator import Durability, encode_source
from ontoflow.actors.orchestrator.engine import Dispatch, RunSubmitted
from ontoflow.runtime.journal import CommitBatch, JournalBatchError, RunRow, open_journal
from ontoflow.runtime.journal._schema import SCHEMA

from tests.actors.orchestrator.parts import CAP, one_step

DOCUMENT = {"start": "m", "nodes": {"m": {"entry_block": "a", "blocks": {"a": {"worker": CAP.id}}}}}

#: The tables as journals were created before the keys' partial indexes (same schema version).
SCHEMA_BEFORE = (SCHEMA.replace("    idempotency_key TEXT,\n", "    idempotency_key TEXT UNIQUE,\n")
                 .replace("    trigger_key TEXT,\n", "    trigger_key TEXT UNIQUE,\n")
                 .replace("CREATE UNIQUE INDEX runs_by_key ON runs (idempotency_key) WHERE idempotency_key IS NOT NULL;\n", "")
                 .replace("CREATE UNIQUE INDEX runs_by_trigger ON runs (trigger_key) WHERE trigger_key IS NOT NULL;\n", ""))


def _create(path: Path, created: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty journal at ``path``, with the tables of ``created`` (``now`` or ``before``)."""
    with monkeypatch.context() as patch:
        if created == "before":
            patch.setattr(open_module, "SCHEMA", SCHEMA_BEFORE)
        open_journal(path).close()
    conn = sqlite3.connect(path)
    try:
        sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'runs'").fetchone()[0]
    finally:
        conn.close()
    assert ("idempotency_key TEXT UNIQUE" in sql) == (created == "before")


def _row(run_id: str, *, key: str | None = None, trigger: str | None = None) -> RunRow:
    return RunRow(run_id=run_id, source_hash="h1", submitted_ms=1, idempotency_key=key, trigger_key=trigger)


@pytest.mark.parametrize("created", ["now", "before"])
def test_a_key_is_unique_among_runs_that_have_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, created: str) -> None:
    path = tmp_path / "j.sqlite"
    _create(path, created, monkeypatch)
    with open_journal(path) as journal:
        batch = CommitBatch()
        batch.runs += [_row(f"plain{n}") for n in range(3)]  # keyless runs: as many as submitted
        batch.runs += [_row("keyed", key="k1"), _row("triggered", trigger="t1")]
        journal.commit(batch)
        assert journal.run_by_key("k1").run_id == "keyed" and journal.run_by_trigger("t1").run_id == "triggered"
        assert journal.run_by_key("k2") is None and journal.count() == 5
        for row, column in ((_row("again", key="k1"), "idempotency_key"), (_row("again", trigger="t1"), "trigger_key")):
            batch = CommitBatch()
            batch.runs.append(row)
            with pytest.raises(JournalBatchError, match=f"UNIQUE constraint failed: runs.{column}"):
                journal.commit(batch)
        assert journal.run("again") is None
        for column in ("idempotency_key", "trigger_key"):  # a submit's lookup by key reads an index
            plan = journal._conn.execute(f"EXPLAIN QUERY PLAN SELECT run_id FROM runs WHERE {column} = ?", ("k",)).fetchall()
            assert "USING INDEX" in plan[0][3] or "USING COVERING INDEX" in plan[0][3]


@pytest.mark.parametrize("created", ["now", "before"])
def test_a_journal_of_either_form_recovers_its_unfinished_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              created: str) -> None:
    path = tmp_path / "j.sqlite"
    _create(path, created, monkeypatch)
    workflow = one_step()
    source = encode_source(DOCUMENT, workflow)
    with open_journal(path) as journal:
        writer = Durability(journal)
        writer.submitted(RunRow(run_id="r1", source_hash=source[0], submitted_ms=0, idempotency_key="k"), source)
        fact = RunSubmitted(run_id="r1", inputs={}, now_ms=0)
        writer.fact("r1", fact)
        writer.commit()
    with open_journal(path) as journal:
        sent: list[Dispatch] = []
        report = Durability(journal).recover(50, adopt=lambda run, row: None, lost=lambda run, fact: None,
                                             dispatch=lambda d, now: sent.append(d))
        assert Durability(journal).find(idempotency_key="k") == "r1"
    assert report.runs == 1 and report.redispatched == 1 and [d.run_id for d in sent] == ["r1"]


@pytest.mark.parametrize("created", ["now", "before"])
def test_each_runs_facts_come_back_in_append_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, created: str) -> None:
    # A journal of either form gives each run's rows back in append order, runs interleaved.
    path = tmp_path / "j.sqlite"
    _create(path, created, monkeypatch)
    with open_journal(path) as journal:
        for commit in range(3):
            batch = CommitBatch()
            if commit == 0:
                batch.runs += [_row("b"), _row("a")]
            for n in range(40):
                batch.fact("ab"[n % 2], ("fact", "dispatched")[n % 3 == 0], n, bytes([commit, n]))
            journal.commit(batch)
        for n, run_id in enumerate("ab"):
            assert [tuple(f.body) for f in journal.facts(run_id)] == [(c, i) for c in range(3) for i in range(n, 40, 2)]
        assert [f.run_id for f in journal.unfinished_facts()] == ["a"] * 60 + ["b"] * 60
        assert [tuple(f.body) for f in journal.unfinished_facts()][:3] == [(0, 0), (0, 2), (0, 4)]
