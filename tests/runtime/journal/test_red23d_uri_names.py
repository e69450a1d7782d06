"""A journal path that looks like a SQLite URI is a file name, as the user typed it.

This SQLite reads every file name as a URI: ``--journal 'file:runs.sqlite?mode=memory'`` (a
relative path) made a journal in memory, the daemon acknowledging runs that no restart could
find; ``--journal file:runs.sqlite`` wrote ``runs.sqlite`` while the one-writer lock was taken on
a file named ``file:runs.sqlite``, so a second daemon given ``runs.sqlite`` wrote it as well.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ontoflow.runtime.journal import CommitBatch, RunRow, open_journal, open_shared_journal


def _batch(run_id: str) -> CommitBatch:
    batch = CommitBatch()
    batch.sources["h"] = b"source"
    batch.runs.append(RunRow(run_id=run_id, source_hash="h", submitted_ms=1))
    batch.fact(run_id, "fact", 1, b"body")
    return batch


def test_a_memory_uri_as_a_path_is_a_file_that_keeps_its_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    name = "file:runs.sqlite?mode=memory"
    with open_journal(name) as journal:
        journal.commit(_batch("acknowledged"))
    with open_journal(name) as journal:
        assert [r.run_id for r in journal.unfinished()] == ["acknowledged"]
    assert (tmp_path / name).stat().st_size > 0


def test_a_file_uri_does_not_write_another_daemons_journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with open_journal("runs.sqlite") as first, open_journal("file:runs.sqlite") as second:
        first.commit(_batch("first"))
        second.commit(_batch("second"))
        assert [r.run_id for r in first.unfinished()] == ["first"]
        assert [r.run_id for r in second.unfinished()] == ["second"]
    assert os.path.getsize(tmp_path / "file:runs.sqlite") > 0


def test_a_shared_journal_takes_the_name_as_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    journal = open_shared_journal("file:memo.sqlite?mode=memory")
    journal.close()
    assert (tmp_path / "file:memo.sqlite?mode=memory").stat().st_size > 0
