"""kill -9 a daemon that prunes and starts runs from observations, again and again: no
observation ever has two runs (real daemon processes, a real watcher worker, real SQLite).

The watcher reports every file present every other poll; retention prunes each file's run
soon after it ends; the daemon is killed at random moments (between commits, inside a prune's
shares) and started again on the same journal. At the end each file has had exactly one run:
its row, or its key kept by the prune that removed the row, never both, never two rows (a
second one would also break the journal's unique index and stop the daemon).
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from tests.integration.durable_helpers import REPO, Daemon

pytestmark = pytest.mark.anyio

EXAMPLE = REPO / "configs" / "examples" / "file_trigger" / "on_new_file.json"
FILES = 12
_MOVES = ("run_triggered", "journal_pruned", "observation_repeated")


def _durable(journal: Path) -> set[str]:
    """The observation ids whose run the journal holds or held (its row, or its kept key)."""
    if not journal.exists():
        return set()
    rows, kept = _keys(journal)
    return {key.split(":", 2)[2] for key in [*rows, *kept]}


def _triggered(log: Path) -> list[str]:
    """The observation ids a daemon's log says it started a run for."""
    return [json.loads(line)["id"] for line in log.read_text().splitlines() if '"run_triggered"' in line]


def _keys(journal: Path) -> tuple[list[str], set[str]]:
    """The trigger keys of the journal's runs (one per row) and those its prunes kept."""
    with sqlite3.connect(f"file:{journal}?mode=ro", uri=True) as conn:
        rows = [r[0] for r in conn.execute("SELECT trigger_key FROM runs WHERE trigger_key IS NOT NULL")]
        kept = {r[0] for r in conn.execute("SELECT key FROM memory WHERE scope = 'trigger_pruned'")}
    conn.close()
    return rows, kept


@pytest.mark.parametrize("seed", [1, 2])
async def test_no_observation_has_two_runs_across_kills_and_prunes(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    address = f"ipc://{tmp_path}/d.sock"
    journal = tmp_path / "j.sqlite"
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for n in range(FILES):
        (inbox / f"f{n}.txt").write_text(str(n))
    env = dict(os.environ, ONTOFLOW_WATCH_DIR=str(inbox), ONTOFLOW_WATCH_INTERVAL_MS="20",
               ONTOFLOW_WATCH_REANNOUNCE="2", PYTHONPATH=str(REPO))
    worker = subprocess.Popen([sys.executable, "-m", "ontoflow", "worker", "--connect", address], cwd=REPO, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    flags = ("--trigger-workflow", str(EXAMPLE), "--retention-s", "0.1", "--prune-every-s", "0.02", "--log-level", "debug")
    daemon = None
    try:
        durable_at_start = []
        for cycle in range(4):
            durable_at_start.append(_durable(journal))  # the journal as the killed daemon left it
            daemon = Daemon(address, journal, tmp_path / f"d{cycle}.log", *flags)
            await daemon.ready()
            log = tmp_path / f"d{cycle}.log"
            # Killed after this many of its moves: a run started, a prune, a report seen before.
            wanted = rng.randrange(1, 30)
            with anyio.fail_after(30):
                while cycle < 3 and sum(log.read_text().count(f'"{event}"') for event in _MOVES) < wanted:
                    assert daemon.proc.poll() is None, f"the daemon stopped: {log.read_text()[-1500:]}"
                    await anyio.sleep(0.005)  # the daemon's own moves: re-read its log
            if cycle < 3:
                daemon.kill()
        assert daemon is not None
        last = tmp_path / "d3.log"
        with anyio.fail_after(60):  # the last daemon lives until every file has had its run, and
            while True:  # through three reports of every file after that
                rows, kept = _keys(journal)
                seen = sum(last.read_text().count(f'"{event}"') for event in ("run_triggered", "observation_repeated"))
                if len(set(rows) | kept) == FILES and seen >= 3 * FILES and not rows:
                    break
                assert daemon.proc.poll() is None, "the daemon stopped"
                await anyio.sleep(0.05)  # the watcher's reports and the runs are their own moves
        rows, kept = _keys(journal)
        assert len(rows) == len(set(rows)) and not set(rows) & kept, (rows, kept)
        assert daemon.proc.poll() is None
        for cycle, durable in enumerate(durable_at_start):  # no daemon ran again what was durable
            again = set(_triggered(tmp_path / f"d{cycle}.log")) & durable
            assert not again, (cycle, sorted(again))
    finally:
        if daemon is not None:
            daemon.close()
        worker.terminate()
        worker.wait(timeout=10)
