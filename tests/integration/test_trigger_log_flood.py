"""Observations a trigger cannot start a run for are logged within a budget (a real daemon,
a real worker perceiving, a real journal).

A capability reports what it perceives again and again (a folder watcher: every file, every
few polls). While the daemon is busy (``--max-runs``), each report of each observation was a
warning line of its own: 100 observations every 20 ms, 5,000 lines a second, for as long as
the daemon stayed busy. Now the first few of an interval are logged, the rest summed up.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from ontoflow.protocols.client import Submit, SubmitAccepted, Workers, WorkersInfo
from ontoflow.runtime.cli import open_client, request
from tests.integration.durable_capabilities import manifest
from tests.integration.durable_helpers import REPO, Daemon
from tests.integration.trigger_flood_capabilities import KIND, WATCH_ID

pytestmark = pytest.mark.anyio

CAPS = Path(__file__).with_name("trigger_flood_capabilities.py")


def _workflow(path: Path) -> Path:
    document = {"name": "on_flood", "triggers": [{"kind": KIND, "capability": WATCH_ID}], "start": "m",
                "nodes": {"m": {"entry_block": "b", "blocks": {"b": {"worker": WATCH_ID}}}}}
    path.write_text(json.dumps(document))
    return path


async def test_observations_deferred_while_busy_are_logged_within_a_budget(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    polls = tmp_path / "polls.audit"
    log = tmp_path / "d.log"
    # One run in flight fills --max-runs 1: its step waits for a worker that never comes.
    daemon = Daemon(address, tmp_path / "j.sqlite", log, "--max-runs", "1", "--trigger-workflow",
                    str(_workflow(tmp_path / "wf.json")), "--capabilities", "tests/integration/durable_capabilities.py",
                    "--schedule-to-start-ms", "3600000")
    worker = None
    try:
        await daemon.ready()
        async with open_client(address) as client:
            busy = await request(client, Submit(manifest=manifest(1), inputs={"t.value": 1}))
            assert isinstance(busy, SubmitAccepted)
            env = dict(os.environ, PYTHONPATH=str(REPO), FLOOD_COUNT="100", FLOOD_AUDIT=str(polls))
            worker = subprocess.Popen([sys.executable, "-m", "ontoflow", "worker", "--connect", address,
                                       "--no-builtins", "--capabilities", str(CAPS)], cwd=REPO, env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
            with anyio.fail_after(30):
                while True:
                    info = await request(client, Workers())
                    assert isinstance(info, WorkersInfo)
                    if any(WATCH_ID in w.capabilities for w in info.workers):
                        break
                    await anyio.sleep(0.02)  # re-asked: registration is the worker's move
            start = polls.read_text().count("poll") if polls.exists() else 0
            with anyio.fail_after(30):  # 20 polls of 100 observations each, all deferred
                while (polls.read_text().count("poll") if polls.exists() else 0) < start + 20:
                    await anyio.sleep(0.02)  # the worker's polls are its own move: re-read
            await request(client, Workers())  # a round trip: the daemon has read what came before it
        lines = log.read_text().count('"observation_deferred"')
        assert 1 <= lines <= 11, lines  # before: a line per observation and report (2,000 here)
        assert daemon.proc.poll() is None
    finally:
        daemon.close()
        if worker is not None:
            worker.terminate()
            worker.wait(timeout=10)
