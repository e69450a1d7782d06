"""Clients that wait on a run do not hang (issue 13, defect 10): ``submit --wait`` shows the
run id on acceptance, survives a kill -9 and restart of the daemon on the same journal and
prints the run's end; ``--timeout`` gives up with exit 6 and says how to follow the run again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from ontoflow.protocols.client import Workers, WorkersInfo
from ontoflow.runtime.cli import EXIT_TIMEOUT, open_client, request
from tests.integration.durable_capabilities import manifest
from tests.integration.durable_helpers import REPO, Daemon, Worker

pytestmark = pytest.mark.anyio


async def _wait_for_worker(address: str) -> None:
    async with open_client(address) as client:
        with anyio.fail_after(30):
            while True:
                info = await request(client, Workers())
                assert isinstance(info, WorkersInfo)
                if info.workers:
                    return
                await anyio.sleep(0.02)  # re-asked: registration is the worker's move


def _cli(*args: str) -> subprocess.Popen:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.Popen([sys.executable, "-m", "ontoflow", *args], cwd=REPO, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


async def _line_with(stream, text: str, timeout: float = 60) -> tuple[str, list[str]]:
    """Read ``stream`` until a line holds ``text``; that line and the ones before it."""
    seen: list[str] = []
    with anyio.fail_after(timeout):
        while True:
            line = await anyio.to_thread.run_sync(stream.readline)
            assert line, f"stream ended before {text!r}: {seen}"
            if text in line:
                return line, seen
            seen.append(line)


async def test_submit_wait_survives_a_kill_9_and_restart_of_the_daemon(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    journal = tmp_path / "j.sqlite"
    doc = tmp_path / "m.json"
    doc.write_text(json.dumps(manifest(3)))
    worker = Worker(address, tmp_path / "a.audit", step_s=1.0)
    daemon = Daemon(address, journal, tmp_path / "d.log")
    cli = None
    try:
        await daemon.ready()
        await _wait_for_worker(address)
        cli = _cli("submit", str(doc), "--wait", "--json", "--connect", address, "--input", "t.value=1")
        accepted, before = await _line_with(cli.stderr, "accepted")
        # The run id is shown on acceptance, while the run still goes on (3 steps of 1 s).
        assert cli.poll() is None
        assert any("idempotency-key" in line for line in before)  # made up for a safe re-send, and said
        run_id = accepted.split("run ", 1)[1].split()[0]
        daemon.kill()
        daemon = Daemon(address, journal, tmp_path / "d2.log")
        await daemon.ready()
        out, err = await anyio.to_thread.run_sync(lambda: cli.communicate(timeout=120))
        assert cli.returncode == 0, err
        ended = json.loads(out)
        assert ended["run_id"] == run_id and ended["status"] == "completed"
        assert ended["context"]["t.value"] == 40  # 1 -> 4 -> 13 -> 40
    finally:
        if cli is not None and cli.poll() is None:
            cli.kill()
            cli.communicate()
        daemon.close()
        worker.close()


async def test_timeout_gives_up_with_its_own_exit_code_and_says_how_to_follow_the_run(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    doc = tmp_path / "m.json"
    doc.write_text(json.dumps(manifest(2)))
    worker = Worker(address, tmp_path / "a.audit", step_s=30)
    daemon = Daemon(address, tmp_path / "j.sqlite", tmp_path / "d.log")
    try:
        await daemon.ready()
        await _wait_for_worker(address)
        # --timeout bounds the submit's acknowledgement too: 3 s (the step takes 30) leaves a loaded
        # daemon time to accept, so the timeout passes while the run goes on, as this test means.
        cli = _cli("submit", str(doc), "--wait", "--timeout", "3", "--connect", address, "--input", "t.value=1")
        out, err = await anyio.to_thread.run_sync(lambda: cli.communicate(timeout=60))
        assert cli.returncode == EXIT_TIMEOUT == 6, err
        run_id = err.split("run ", 1)[1].split()[0]
        assert f"--timeout 3 s passed before run {run_id} ended" in err
        assert f"ontoflow status {run_id} --wait" in err and out == ""
        status = _cli("status", run_id, "--wait", "--timeout", "0.5", "--connect", address)
        _, err = await anyio.to_thread.run_sync(lambda: status.communicate(timeout=60))
        assert status.returncode == EXIT_TIMEOUT and "passed before run" in err
    finally:
        daemon.close()
        worker.close()


async def test_ctrl_c_on_a_waiting_submit_says_how_to_look_the_run_up(tmp_path: Path) -> None:
    import signal

    address = f"ipc://{tmp_path}/d.sock"
    doc = tmp_path / "m.json"
    doc.write_text(json.dumps(manifest(1)))
    worker = Worker(address, tmp_path / "a.audit", step_s=30)
    daemon = Daemon(address, tmp_path / "j.sqlite", tmp_path / "d.log")
    try:
        await daemon.ready()
        await _wait_for_worker(address)
        cli = _cli("submit", str(doc), "--wait", "--connect", address, "--input", "t.value=1")
        accepted, _ = await _line_with(cli.stderr, "accepted")
        run_id = accepted.split("run ", 1)[1].split()[0]
        cli.send_signal(signal.SIGINT)
        _, err = await anyio.to_thread.run_sync(lambda: cli.communicate(timeout=60))
        assert cli.returncode == 130
        assert "interrupted" in err and f"ontoflow status {run_id} --wait" in err
    finally:
        daemon.close()
        worker.close()
