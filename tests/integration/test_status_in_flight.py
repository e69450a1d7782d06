"""A run that goes on says where it is (seed 000: "the system state is always known"):
``ontoflow status RUN`` names its steps in flight, in text and in ``RunStatus.running``, and
``ontoflow watch RUN`` prints each step as it starts (``  s1  CAP  running``), not only as it
ends. ``status`` printed ``run R running`` and nothing of the step it was in; ``watch`` of a
run held in a long step printed nothing at all (red23a noticed). JSON lines of ``watch`` are
unchanged."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from ontoflow.protocols.client import CancelRun, RunStatus, Status, Submit, SubmitAccepted, Workers, WorkersInfo
from ontoflow.runtime.cli import open_client, request
from tests.integration.durable_capabilities import STEP_ID, manifest
from tests.integration.durable_helpers import Daemon, Worker, wait_for_starts

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def _held_run(tmp_path: Path, steps: int) -> AsyncIterator[tuple[str, Any, str]]:
    """A daemon and a worker whose step runs until the test cancels it: (address, a client,
    the run's id), its first step started."""
    address = f"ipc://{tmp_path}/d.sock"
    audit = tmp_path / "a.audit"
    worker = Worker(address, audit, step_s=600)  # the step runs until the test cancels it
    daemon = Daemon(address, None, tmp_path / "d.log")
    try:
        await daemon.ready()
        async with open_client(address) as client:
            with anyio.fail_after(30):
                while not isinstance(info := await request(client, Workers()), WorkersInfo) or not info.workers:
                    await anyio.sleep(0.02)  # re-asked: registration is the worker's move
            accepted = await request(client, Submit(manifest=manifest(steps), inputs={"t.value": 1}), timeout_s=60)
            assert isinstance(accepted, SubmitAccepted), accepted
            await wait_for_starts(audit, 1)
            yield address, client, accepted.run_id
    finally:
        daemon.terminate()
        worker.close()


async def test_status_of_a_run_that_goes_on_names_its_step_in_flight(tmp_path: Path) -> None:
    async with _held_run(tmp_path, 2) as (address, client, run_id):
        status = await request(client, Status(run_id=run_id), timeout_s=60)
        assert isinstance(status, RunStatus) and status.running == [("s1", STEP_ID)], status
        for argv, shown in ((["--json"], None), ([], f"  in flight: s1 {STEP_ID}")):
            done = subprocess.run([sys.executable, "-m", "ontoflow", "status", run_id, "--connect", address,
                                   *argv], cwd=tmp_path, capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr
            if shown is None:
                assert json.loads(done.stdout)["running"] == [["s1", STEP_ID]]
            else:
                assert done.stdout.splitlines()[1:] == [shown], done.stdout
        ended = await request(client, CancelRun(run_id=run_id), timeout_s=60)
        assert isinstance(ended, RunStatus) and ended.running == [], ended


async def test_watch_names_the_step_in_flight_when_it_starts(tmp_path: Path) -> None:
    async with _held_run(tmp_path, 1) as (address, client, run_id):
        async with await anyio.open_process([sys.executable, "-m", "ontoflow", "watch", run_id,
                                             "--connect", address], cwd=tmp_path) as watch:
            try:
                assert watch.stdout is not None
                seen = b""
                with anyio.fail_after(60):  # until the watcher has printed the step it found running
                    while b"running" not in seen:
                        seen += await watch.stdout.receive()
                assert seen.decode().splitlines()[0].split() == ["s1", STEP_ID, "running"], seen
                ended = await request(client, CancelRun(run_id=run_id), timeout_s=60)
                assert isinstance(ended, RunStatus)
                with anyio.fail_after(60):
                    assert await watch.wait() == 1  # the run ended cancelled
            finally:
                if watch.returncode is None:  # a failed wait: not left running for the close to wait on
                    watch.kill()
