"""A run whose journal record is damaged is answered ``journal_damaged`` (CLI exit 3, the
journal's), naming the run: not ``internal`` as if the daemon had a bug, and the daemon serves
on. The row is damaged by hand between two starts, as a bad disk or a careless edit would."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ontoflow.protocols.client import Error, ListRuns, RunStatus, RunTrace, Show, Status, Submit, SubmitAccepted
from ontoflow.runtime.cli import open_client, request
from tests.integration.durable_capabilities import manifest
from tests.integration.durable_helpers import REPO, Daemon, Worker
from tests.integration.replay_helpers import wait_for_capability

pytestmark = pytest.mark.anyio


async def test_show_of_a_run_whose_record_is_damaged_names_the_damage_and_the_daemon_serves_on(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    journal = tmp_path / "j.sqlite"
    worker = Worker(address, tmp_path / "a.audit", step_s=0.0)
    daemon = Daemon(address, journal, tmp_path / "d.log")
    try:
        await daemon.ready()
        async with open_client(address) as client:
            await wait_for_capability(client, "t.durable.step")
            runs = []
            for value in (1, 2):
                accepted = await request(client, Submit(manifest=manifest(1), inputs={"t.value": value}))
                assert isinstance(accepted, SubmitAccepted)
                done = await request(client, Status(run_id=accepted.run_id, wait=True), timeout_s=30)
                assert isinstance(done, RunStatus) and done.status == "completed"
                runs.append(accepted.run_id)
        assert daemon.terminate() == 0
        bad, good = runs
        with sqlite3.connect(journal) as conn:
            conn.execute("UPDATE facts SET body = x'92c1' WHERE run_id = ? AND kind = 'fact'", (bad,))
        daemon = Daemon(address, journal, tmp_path / "d2.log")
        await daemon.ready()
        async with open_client(address) as client:
            refused = await request(client, Show(run_id=bad))
            assert isinstance(refused, Error) and refused.code == "journal_damaged"
            assert bad in refused.message and "damaged" in refused.message
            shown = await request(client, Show(run_id=good))  # the daemon serves on
            assert isinstance(shown, RunTrace) and shown.status == "completed"
        cli = subprocess.run([sys.executable, "-m", "ontoflow", "show", bad, "--connect", address],
                             capture_output=True, text=True, cwd=REPO, timeout=60)
        assert cli.returncode == 3 and "journal_damaged" in cli.stderr and "Traceback" not in cli.stderr
    finally:
        daemon.close()
        worker.close()


async def test_a_run_row_with_a_status_no_run_has_is_answered_journal_damaged_not_silence(tmp_path: Path) -> None:
    # A row edited by hand to a status no run has (``Running``): the daemon sent it in a RunList
    # that no client decodes, so ``ontoflow runs`` timed out with the daemon silent.
    address = f"ipc://{tmp_path}/d.sock"
    journal = tmp_path / "j.sqlite"
    waiting = ("--capabilities", "tests/integration/durable_capabilities.py", "--schedule-to-start-ms", "3600000")
    daemon = Daemon(address, journal, tmp_path / "d.log", *waiting)
    try:
        await daemon.ready()
        async with open_client(address) as client:
            accepted = await request(client, Submit(manifest=manifest(1), inputs={"t.value": 1}))
            assert isinstance(accepted, SubmitAccepted)
        assert daemon.terminate() == 0
        with sqlite3.connect(journal) as conn:
            conn.execute("UPDATE runs SET status = 'Running' WHERE run_id = ?", (accepted.run_id,))
        daemon = Daemon(address, journal, tmp_path / "d2.log", *waiting)
        await daemon.ready()
        async with open_client(address) as client:
            for message in (ListRuns(), Status(run_id=accepted.run_id)):
                refused = await request(client, message, timeout_s=10)
                assert isinstance(refused, Error) and refused.code == "journal_damaged", refused
        assert "its status is not a run status" in (tmp_path / "d2.log").read_text()
    finally:
        daemon.close()


async def test_a_run_whose_source_row_is_gone_is_answered_journal_damaged_not_internal(tmp_path: Path) -> None:
    # Its workflow source deleted by hand (or lost): the daemon answered ``internal``, as if it
    # had a bug, for a journal that is damaged.
    address = f"ipc://{tmp_path}/d.sock"
    journal = tmp_path / "j.sqlite"
    waiting = ("--capabilities", "tests/integration/durable_capabilities.py", "--schedule-to-start-ms", "3600000")
    daemon = Daemon(address, journal, tmp_path / "d.log", *waiting)
    try:
        await daemon.ready()
        async with open_client(address) as client:
            accepted = await request(client, Submit(manifest=manifest(1), inputs={"t.value": 1}))
            assert isinstance(accepted, SubmitAccepted)
        assert daemon.terminate() == 0
        with sqlite3.connect(journal) as conn:
            conn.execute("DELETE FROM sources")
        daemon = Daemon(address, journal, tmp_path / "d2.log", *waiting)
        await daemon.ready()
        async with open_client(address) as client:
            for message in (Status(run_id=accepted.run_id), Show(run_id=accepted.run_id)):
                refused = await request(client, message, timeout_s=10)
                assert isinstance(refused, Error) and refused.code == "journal_damaged", refused
                assert accepted.run_id in refused.message
    finally:
        daemon.close()
