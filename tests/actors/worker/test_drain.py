"""SIGTERM drains a worker process: the running step finishes and is answered, every
capability's ``shutdown()`` runs, the daemon hears goodbye, and the process exits 0."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from ontoflow.protocols.client import RunStatus, Status, Submit, SubmitAccepted, Workers, WorkersInfo
from ontoflow.runtime.cli import open_client, request
from tests.actors.worker.drain_worker import SLOW_ID
from tests.integration.durable_helpers import REPO, Daemon

pytestmark = pytest.mark.anyio

SCRIPT = Path(__file__).with_name("drain_worker.py")
MANIFEST = {"start": "m", "nodes": {"m": {"entry_block": "s", "blocks": {"s": {"worker": SLOW_ID}}}}}


def _worker(address: str, audit: Path, step_s: float, grace_s: float, *, cli: bool = False) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               DRAIN_AUDIT=str(audit), DRAIN_STEP_S=str(step_s), DRAIN_GRACE_S=str(grace_s))
    argv = [sys.executable, str(SCRIPT), address]
    if cli:  # the command users run: ``ontoflow worker`` drains the same way
        argv = [sys.executable, "-m", "ontoflow", "worker", "--connect", address, "--capabilities", str(SCRIPT),
                "--no-builtins", "--worker-id", "drainer", "--grace-s", str(grace_s)]
    return subprocess.Popen(argv, cwd=REPO, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _lines(audit: Path) -> list[str]:
    return audit.read_text().split() if audit.exists() else []


async def _until(predicate, timeout: float = 30) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.01)  # another process writes the file: no event to wait on


async def _registered(client) -> None:
    with anyio.fail_after(30):
        while True:
            info = await request(client, Workers())
            assert isinstance(info, WorkersInfo)
            if any(SLOW_ID in w.capabilities for w in info.workers):
                return
            await anyio.sleep(0.02)  # re-asked: registration is the worker's move


def _events(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]


@pytest.mark.parametrize("cli", [False, True], ids=["worker_host", "ontoflow_worker"])
async def test_sigterm_finishes_the_running_step_answers_and_exits_0(tmp_path: Path, cli: bool) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    audit, log = tmp_path / "audit", tmp_path / "d.log"
    daemon = Daemon(address, tmp_path / "j.sqlite", log)
    worker = _worker(address, audit, step_s=1.0, grace_s=10, cli=cli)
    try:
        await daemon.ready()
        async with open_client(address) as client:
            await _registered(client)
            accepted = await request(client, Submit(manifest=MANIFEST))
            assert isinstance(accepted, SubmitAccepted)
            await _until(lambda: _lines(audit) == ["start"])
            worker.send_signal(signal.SIGTERM)  # the step is running now
            code = await anyio.to_thread.run_sync(lambda: worker.wait(timeout=30))
            assert code == 0, worker.stderr.read().decode()[-2000:] if worker.stderr else ""
            assert _lines(audit) == ["start", "done", "shutdown"]
            status = await request(client, Status(run_id=accepted.run_id, wait=True), timeout_s=30)
            assert isinstance(status, RunStatus) and status.status == "completed", status
            assert status.context["t.slept"] is True
        await _until(lambda: any(e.get("event") == "worker_disconnected" for e in _events(log)))
        gone = [e for e in _events(log) if e.get("event") == "worker_disconnected"]
        assert gone[0]["worker_id"] == "drainer" and gone[0]["reason"] == "worker shutting down"
    finally:
        if worker.poll() is None:
            worker.kill()
        worker.wait(timeout=30)
        if worker.stderr is not None:
            worker.stderr.close()
        daemon.close()


async def test_a_step_past_the_grace_period_is_left_to_the_orchestrator(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    audit = tmp_path / "audit"
    daemon = Daemon(address, tmp_path / "j.sqlite", tmp_path / "d.log")
    worker = _worker(address, audit, step_s=60, grace_s=0.3)
    try:
        await daemon.ready()
        async with open_client(address) as client:
            await _registered(client)
            accepted = await request(client, Submit(manifest=MANIFEST))
            assert isinstance(accepted, SubmitAccepted)
            await _until(lambda: _lines(audit) == ["start"])
            worker.send_signal(signal.SIGTERM)
            code = await anyio.to_thread.run_sync(lambda: worker.wait(timeout=30))
            assert code == 0
            assert _lines(audit) == ["start", "shutdown"]  # not done: cut at the grace period
            # The goodbye reached the daemon: the step is a lost worker's (not idempotent: failure).
            status = await request(client, Status(run_id=accepted.run_id, wait=True), timeout_s=30)
            assert isinstance(status, RunStatus) and status.status == "failed"
    finally:
        if worker.poll() is None:
            worker.kill()
        worker.wait(timeout=30)
        if worker.stderr is not None:
            worker.stderr.close()
        daemon.close()
