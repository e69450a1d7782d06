"""``ontoflow status RUN`` of a run that goes on says where it is: its steps in flight (step id
and capability), in text and in ``RunStatus.running`` (seed 000: "the system state is always
known"). It printed ``run R running`` and nothing of the step it was in."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from ontoflow.protocols.client import CancelRun, RunStatus, Status, Submit, SubmitAccepted, Workers, WorkersInfo
from ontoflow.runtime.cli import open_client, request
from tests.integration.durable_capabilities import STEP_ID, manifest
from tests.integration.durable_helpers import Daemon, Worker, wait_for_starts

pytestmark = pytest.mark.anyio


async def test_status_of_a_run_that_goes_on_names_its_step_in_flight(tmp_path: Path) -> None:
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
            accepted = await request(client, Submit(manifest=manifest(2), inputs={"t.value": 1}), timeout_s=60)
            assert isinstance(accepted, SubmitAccepted), accepted
            await wait_for_starts(audit, 1)
            status = await request(client, Status(run_id=accepted.run_id), timeout_s=60)
            assert isinstance(status, RunStatus) and status.running == [("s1", STEP_ID)], status
            for argv, shown in ((["--json"], None), ([], f"  in flight: s1 {STEP_ID}")):
                done = subprocess.run([sys.executable, "-m", "ontoflow", "status", accepted.run_id, "--connect", address,
                                       *argv], cwd=tmp_path, capture_output=True, text=True, timeout=60)
                assert done.returncode == 0, done.stderr
                if shown is None:
                    assert json.loads(done.stdout)["running"] == [["s1", STEP_ID]]
                else:
                    assert done.stdout.splitlines()[1:] == [shown], done.stdout
            ended = await request(client, CancelRun(run_id=accepted.run_id), timeout_s=60)
            assert isinstance(ended, RunStatus) and ended.running == [], ended
    finally:
        daemon.terminate()
        worker.close()
