"""The daemon's retention against real processes, a real SQLite journal and kill -9.

- A document submitted again after its last run was pruned: its new run is acknowledged, so it
  must survive a kill -9 (before, its pinned source had gone with the prune and the daemon
  remembered it as written: the run was lost at the next start, ``run_unrecoverable``).
- A prune SQLite refuses (another program holds the journal's write lock: an operator's
  ``sqlite3`` shell in a transaction) is logged and tried again; the daemon serves on (before,
  the error left the daemon's task group and the daemon stopped).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

from ontoflow.protocols.client import CancelRun, ListRuns, RunList, RunStatus, Status, Submit, SubmitAccepted
from ontoflow.runtime.cli import open_client, request
from tests.integration.durable_capabilities import manifest
from tests.integration.durable_helpers import Daemon, journal_runs

pytestmark = pytest.mark.anyio

#: The capability is known from the start and no worker comes: a run waits for one for ever.
_WAITING = ("--capabilities", "tests/integration/durable_capabilities.py", "--schedule-to-start-ms", "3600000")


async def _wait_pruned(journal: Path, run_id: str, daemon: Daemon) -> None:
    with anyio.fail_after(30):
        while run_id in journal_runs(journal):
            assert daemon.proc.poll() is None, "the daemon stopped"
            await anyio.sleep(0.05)  # the prune is the daemon's periodic move: re-read


async def test_a_document_submitted_again_after_its_runs_were_pruned_survives_a_kill(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    journal = tmp_path / "j.sqlite"
    retention = ("--retention-s", "0.2", "--prune-every-s", "0.1")
    daemon = Daemon(address, journal, tmp_path / "d1.log", *retention, *_WAITING)
    try:
        await daemon.ready()
        async with open_client(address) as client:
            first = await request(client, Submit(manifest=manifest(1), inputs={"t.value": 1}))
            assert isinstance(first, SubmitAccepted)
            ended = await request(client, CancelRun(run_id=first.run_id))
            assert isinstance(ended, RunStatus) and ended.status == "cancelled"
            await _wait_pruned(journal, first.run_id, daemon)  # its run and the source it pinned go
            second = await request(client, Submit(manifest=manifest(1), inputs={"t.value": 2}))
            assert isinstance(second, SubmitAccepted)
        daemon.kill()
        daemon = Daemon(address, journal, tmp_path / "d2.log", *retention, *_WAITING)
        await daemon.ready()
        async with open_client(address) as client:
            status = await request(client, Status(run_id=second.run_id))
        assert isinstance(status, RunStatus) and status.status == "running", status
        assert "run_unrecoverable" not in (tmp_path / "d2.log").read_text()
    finally:
        daemon.close()


async def test_a_prune_sqlite_refuses_is_logged_and_the_daemon_serves_on(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    journal = tmp_path / "j.sqlite"
    log = tmp_path / "d.log"
    daemon = Daemon(address, journal, log, "--retention-s", "0.2", "--prune-every-s", "0.1", *_WAITING)
    holder = None
    try:
        await daemon.ready()
        async with open_client(address) as client:
            run = await request(client, Submit(manifest=manifest(1), inputs={"t.value": 1}))
            assert isinstance(run, SubmitAccepted)
            ended = await request(client, CancelRun(run_id=run.run_id))
            assert isinstance(ended, RunStatus) and ended.status == "cancelled"
            # Another program takes the journal's write lock (SQLite's own, not ontoflow's).
            holder = sqlite3.connect(journal, isolation_level=None, timeout=0)
            holder.execute("BEGIN IMMEDIATE")
            with anyio.fail_after(60):
                while "journal_prune_failed" not in log.read_text():
                    assert daemon.proc.poll() is None, f"the daemon stopped: {daemon.proc.stderr.read().decode()[-1500:]}"
                    await anyio.sleep(0.05)  # waiting on the daemon's log line: re-read
            holder.execute("ROLLBACK")
            holder.close()
            holder = None
            await _wait_pruned(journal, run.run_id, daemon)  # the next interval prunes it
            listing = await request(client, ListRuns())
            assert isinstance(listing, RunList) and listing.runs == []
        assert daemon.proc.poll() is None
    finally:
        if holder is not None:
            holder.close()
        daemon.close()
