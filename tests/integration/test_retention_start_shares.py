"""The prune at a daemon's start goes in shares, after it listens (red team, session 21): it
was one transaction done before the daemon bound its socket, so a journal holding 500,000
prunable runs held the start (3.4 s, every client and worker unanswered). Now the retention
loop's first prune starts at once, a share per turn of the loop, and the daemon says it listens
before more than one share has gone (a real daemon on a real socket and SQLite journal)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

from ontoflow.runtime.daemon import DaemonConfig, serve_daemon
from ontoflow.runtime.journal import CommitBatch, RunRow, open_journal
from ontoflow.runtime.journal._prune import PRUNE_SHARE

pytestmark = pytest.mark.anyio

_RUNS = 4 * PRUNE_SHARE


def _ended_runs(path: Path, count: int) -> None:
    with open_journal(path) as journal:
        batch = CommitBatch()
        batch.sources["h1"] = b"source"
        for n in range(count):
            run_id = f"r{n:06d}"
            batch.runs.append(RunRow(run_id=run_id, source_hash="h1", submitted_ms=10))
            batch.fact(run_id, "fact", 10, b"f")
            batch.end(run_id, "completed", 20)  # 1970: older than any retention
        journal.commit(batch)


def _runs_in(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT count(*) FROM runs").fetchone()[0]


async def test_the_daemon_listens_before_its_start_prune_is_done_and_the_prune_finishes(tmp_path: Path) -> None:
    journal = tmp_path / "j.sqlite"
    _ended_runs(journal, _RUNS)
    config = DaemonConfig(bind=f"ipc://{tmp_path}/d.sock", journal=str(journal), retention_s=60,
                          prune_every_s=3600, announce=False)
    async with anyio.create_task_group() as tg:
        await tg.start(serve_daemon, config)
        # Listening now: at most one share has gone (before: every run, in one transaction).
        assert _runs_in(journal) >= _RUNS - PRUNE_SHARE
        with anyio.fail_after(30):  # the first prune does not wait an interval (an hour here)
            while _runs_in(journal):
                await anyio.sleep(0.01)  # the prune runs on this loop: give it turns
        tg.cancel_scope.cancel()
