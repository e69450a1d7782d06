"""A reply the daemon builds from journal rows is checked against the protocol before it goes
(red team, session 21): a run row edited by hand to ``completed`` with no end time
(``ended_ms`` NULL) gave a ``RunStatus`` (and a ``RunList``) the client decodes as invalid and
drops, so ``ontoflow status`` timed out with the daemon silent. Such a reply is now refused
``journal_damaged`` naming the run (CLI exit 3), and the daemon serves on."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ontoflow.protocols.client import Error, ListRuns, RunList, Show, Status, Submit, SubmitAccepted
from ontoflow.runtime.cli import open_client, request
from tests.integration.durable_capabilities import manifest
from tests.integration.durable_helpers import REPO, Daemon

pytestmark = pytest.mark.anyio

_WAITING = ("--capabilities", "tests/integration/durable_capabilities.py", "--schedule-to-start-ms", "3600000")


async def test_a_completed_row_without_an_end_time_is_answered_journal_damaged_naming_the_run(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    journal = tmp_path / "j.sqlite"
    daemon = Daemon(address, journal, tmp_path / "d.log", *_WAITING)
    try:
        await daemon.ready()
        async with open_client(address) as client:
            ids = []
            for value in (1, 2):
                accepted = await request(client, Submit(manifest=manifest(1), inputs={"t.value": value}))
                assert isinstance(accepted, SubmitAccepted)
                ids.append(accepted.run_id)
        assert daemon.terminate() == 0
        bad, good = ids
        with sqlite3.connect(journal) as conn:
            conn.execute("UPDATE runs SET status = 'completed', ended_ms = NULL WHERE run_id = ?", (bad,))
        daemon = Daemon(address, journal, tmp_path / "d2.log", *_WAITING)
        await daemon.ready()
        async with open_client(address) as client:
            for message in (Status(run_id=bad), ListRuns(), ListRuns(status="completed"), Show(run_id=bad)):
                refused = await request(client, message, timeout_s=10)  # before: a timeout (the reply dropped)
                assert isinstance(refused, Error) and refused.code == "journal_damaged", (message, refused)
                assert bad in refused.message or isinstance(message, ListRuns)  # a list names no run: the log does
            listed = await request(client, ListRuns(status="running"), timeout_s=10)  # the daemon serves on
            assert isinstance(listed, RunList) and [r.run_id for r in listed.runs] == [good]
        cli = subprocess.run([sys.executable, "-m", "ontoflow", "status", bad, "--connect", address],
                             capture_output=True, text=True, cwd=REPO, timeout=60)
        assert cli.returncode == 3 and "journal_damaged" in cli.stderr and "Traceback" not in cli.stderr
        assert bad in (tmp_path / "d2.log").read_text()  # the log names it too
    finally:
        daemon.close()
