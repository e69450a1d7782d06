"""A daemon accepts work for capabilities it knows while no worker offering them is connected.

Real processes: an ``ontoflow daemon --journal`` and the durability tests' worker process. The
catalogue (every capability a worker has offered) is journaled, so a daemon restarted before
its workers still accepts submits naming them, and ``--capabilities MODULE`` tells a daemon its
capabilities before any worker ever connected; a capability never seen is refused naming it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from ontoflow.protocols.client import Error, RunStatus, Status, Submit, SubmitAccepted
from ontoflow.runtime.cli import open_client, request
from tests.integration.durable_capabilities import ONCE_ID, manifest, step_value
from tests.integration.durable_helpers import CAPS, REPO, Daemon, Worker, _env

pytestmark = pytest.mark.anyio


async def _completes(address: str, run_id: str, value: int, steps: int) -> None:
    async with open_client(address) as client:
        status = await request(client, Status(run_id=run_id, wait=True), timeout_s=60)
    assert isinstance(status, RunStatus) and status.status == "completed", status
    for _ in range(steps):
        value = step_value(value)
    assert status.context["t.value"] == value


async def test_a_restarted_daemon_without_workers_accepts_a_capability_it_journaled(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/daemon.sock"
    journal = tmp_path / "journal.sqlite"
    document = manifest(2, ONCE_ID)
    worker = Worker(address, tmp_path / "steps.audit")
    daemon = Daemon(address, journal, tmp_path / "daemon0.log")
    try:
        await daemon.ready()
        async with open_client(address) as client:
            with anyio.fail_after(30):
                while True:  # the worker's registration journals the catalogue
                    reply = await request(client, Submit(manifest=document, inputs={"t.value": 1}))
                    if isinstance(reply, SubmitAccepted):
                        break
                    await anyio.sleep(0.05)  # re-asked: registration is the worker's move
        await _completes(address, reply.run_id, 1, 2)
    finally:
        worker.close()
        daemon.kill()
    daemon = Daemon(address, journal, tmp_path / "daemon1.log")
    worker = None
    try:
        await daemon.ready()
        async with open_client(address) as client:
            reply = await request(client, Submit(manifest=document, inputs={"t.value": 5}))
            assert isinstance(reply, SubmitAccepted), reply  # no worker: accepted, it waits
            running = await request(client, Status(run_id=reply.run_id))
            assert isinstance(running, RunStatus) and running.status == "running"
        worker = Worker(address, tmp_path / "steps.audit")
        await _completes(address, reply.run_id, 5, 2)
    finally:
        if worker is not None:
            worker.close()
        daemon.close()


async def test_a_daemon_told_its_capabilities_accepts_before_any_worker_and_refuses_the_unknown(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/daemon.sock"
    daemon = Daemon(address, tmp_path / "journal.sqlite", tmp_path / "daemon.log", "--capabilities", str(CAPS))
    worker = None
    try:
        await daemon.ready()
        async with open_client(address) as client:
            reply = await request(client, Submit(manifest=manifest(1, ONCE_ID), inputs={"t.value": 3}))
            assert isinstance(reply, SubmitAccepted), reply
            unknown = manifest(1, "t.never.seen")
            refused = await request(client, Submit(manifest=unknown, inputs={"t.value": 3}))
            assert isinstance(refused, Error) and refused.code == "invalid_manifest"
            assert "t.never.seen" in refused.message
        # The CLI: exit 2 (invalid input), naming the capability.
        path = tmp_path / "unknown.json"
        path.write_text(json.dumps(unknown))
        cli = await anyio.to_thread.run_sync(lambda: subprocess.run(
            [sys.executable, "-m", "ontoflow", "submit", str(path), "--connect", address, "-i", "t.value=3"],
            cwd=REPO, env=_env(tmp_path / "cli.audit"), capture_output=True, timeout=60))
        assert cli.returncode == 2, cli.stderr
        assert b"t.never.seen" in cli.stderr
        worker = Worker(address, tmp_path / "steps.audit")
        await _completes(address, reply.run_id, 3, 1)
    finally:
        if worker is not None:
            worker.close()
        daemon.close()


def test_a_capability_module_that_does_not_load_is_a_configuration_error(tmp_path: Path) -> None:
    cli = subprocess.run(
        [sys.executable, "-m", "ontoflow", "daemon", "--bind", f"ipc://{tmp_path}/d.sock",
         "--capabilities", str(tmp_path / "missing.py")],
        cwd=REPO, env=_env(tmp_path / "a.audit"), capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    assert cli.returncode == 2, cli.stderr
    assert b"missing.py" in cli.stderr
