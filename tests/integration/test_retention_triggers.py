"""An observation seen before starts no second run, even once its run was pruned (a real
daemon with a journal and retention, a real worker running ``fs.directory_watcher``).

The watcher reports every file present again every few polls (so an observation its host
dropped is not lost). Before, once retention pruned a file's run, the next report of the same
file (same id) found no run and started a second one: with ``--retention-s 3600``, every file
left in the folder ran again every hour. Then after a kill -9 too: the key outlives the run
in the journal.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from ontoflow.protocols.client import ListRuns, RunList, Workers, WorkersInfo
from ontoflow.runtime.cli import open_client, request
from tests.integration.durable_helpers import REPO, Daemon, journal_runs

pytestmark = pytest.mark.anyio

EXAMPLE = REPO / "configs" / "examples" / "file_trigger" / "on_new_file.json"
#: Reports seen in the daemon's log that found the observation seen before (debug lines).
_REPEATED = '"observation_repeated"'


def _watcher(address: str, inbox: Path, log: Path) -> subprocess.Popen:
    env = dict(os.environ, ONTOFLOW_WATCH_DIR=str(inbox), ONTOFLOW_WATCH_INTERVAL_MS="20", ONTOFLOW_WATCH_REANNOUNCE="2",
               PYTHONPATH=str(REPO))
    return subprocess.Popen([sys.executable, "-m", "ontoflow", "worker", "--connect", address, "--log-file", str(log)],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL)


async def _repeats_after(log: Path, seen: int, more: int, daemon: Daemon) -> None:
    """Wait until ``more`` reports of a known observation came after the first ``seen``."""
    with anyio.fail_after(30):
        while log.read_text().count(_REPEATED) < seen + more:
            assert daemon.proc.poll() is None, "the daemon stopped"
            await anyio.sleep(0.05)  # the watcher's reports are its own move: re-read the log


async def test_a_file_reported_again_after_its_run_was_pruned_starts_no_second_run(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    journal = tmp_path / "j.sqlite"
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "first.txt").write_text("hello")
    flags = ("--trigger-workflow", str(EXAMPLE), "--retention-s", "0.2", "--prune-every-s", "0.05", "--log-level", "debug")
    worker = _watcher(address, inbox, tmp_path / "w.log")
    daemon = Daemon(address, journal, tmp_path / "d1.log", *flags)
    try:
        await daemon.ready()
        with anyio.fail_after(30):  # the file's run starts, ends, and is pruned
            while True:
                log = (tmp_path / "d1.log").read_text()
                if log.count('"run_triggered"') >= 1 and '"journal_pruned"' in log:
                    break
                assert daemon.proc.poll() is None, "the daemon stopped"
                await anyio.sleep(0.05)  # the daemon's own moves: re-read its log
        assert journal_runs(journal) == {}
        # The file is reported again, several times, after its run is gone: no second run.
        await _repeats_after(tmp_path / "d1.log", log.count(_REPEATED), 4, daemon)
        assert (tmp_path / "d1.log").read_text().count('"run_triggered"') == 1
        daemon.kill()  # and a restarted daemon knows it too
        daemon = Daemon(address, journal, tmp_path / "d2.log", *flags)
        await daemon.ready()
        async with open_client(address) as client:
            with anyio.fail_after(30):
                while True:
                    info = await request(client, Workers())
                    assert isinstance(info, WorkersInfo)
                    if info.workers:
                        break
                    await anyio.sleep(0.02)  # re-asked: the worker's reconnection is its move
            await _repeats_after(tmp_path / "d2.log", 0, 4, daemon)
            listing = await request(client, ListRuns())
            assert isinstance(listing, RunList) and listing.runs == []
        assert '"run_triggered"' not in (tmp_path / "d2.log").read_text()
    finally:
        daemon.close()
        worker.terminate()
        worker.wait(timeout=10)
