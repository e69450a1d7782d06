"""``ontoflow watch RUN`` says which steps are in flight as they start (``  s1  CAP  running``),
not only the steps that ended: a run held in a long step printed nothing at all, against seed
000's "the system state is always known" (red23a noticed). JSON lines are unchanged."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from ontoflow.protocols.client import CancelRun, RunStatus, Submit, SubmitAccepted, Workers, WorkersInfo
from ontoflow.runtime.cli import open_client, request
from tests.integration.durable_capabilities import STEP_ID, manifest
from tests.integration.durable_helpers import Daemon, Worker, wait_for_starts

pytestmark = pytest.mark.anyio


async def test_watch_names_the_step_in_flight_when_it_starts(tmp_path: Path) -> None:
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
            accepted = await request(client, Submit(manifest=manifest(1), inputs={"t.value": 1}), timeout_s=60)
            assert isinstance(accepted, SubmitAccepted), accepted
            await wait_for_starts(audit, 1)
            async with await anyio.open_process([sys.executable, "-m", "ontoflow", "watch", accepted.run_id,
                                                 "--connect", address], cwd=tmp_path) as watch:
                try:
                    assert watch.stdout is not None
                    seen = b""
                    with anyio.fail_after(60):  # until the watcher has printed the step it found running
                        while b"running" not in seen:
                            seen += await watch.stdout.receive()
                    assert seen.decode().splitlines()[0].split() == ["s1", STEP_ID, "running"], seen
                    ended = await request(client, CancelRun(run_id=accepted.run_id), timeout_s=60)
                    assert isinstance(ended, RunStatus)
                    with anyio.fail_after(60):
                        assert await watch.wait() == 1  # the run ended cancelled
                finally:
                    if watch.returncode is None:  # a failed wait: not left running for the close to wait on
                        watch.kill()
    finally:
        daemon.terminate()
        worker.close()
