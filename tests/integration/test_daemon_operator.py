"""What an operator does to a running daemon: a hang-up, a second stop signal during the drain,
a ``status --wait`` on a run that outlasts the answer timeout (real daemon and worker processes)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import anyio
import pytest

from ontoflow.protocols.client import RunStatus, Submit, SubmitAccepted
from ontoflow.runtime.cli import open_client, request
from ontoflow.runtime.cli._client import follow
from tests.integration._cli import run_ontoflow
from tests.integration.durable_capabilities import manifest
from tests.integration.durable_helpers import CAPS, REPO, Daemon, Worker, wait_for_starts
from tests.integration.roles_helpers import stop, wait_log, worker_process

pytestmark = pytest.mark.anyio


def _events(log: Path, event: str) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines() if f'"{event}"' in line]


async def _exit_code(daemon: Daemon, timeout: float = 15) -> int:
    with anyio.fail_after(timeout):
        return await anyio.to_thread.run_sync(daemon.proc.wait)


async def test_sighup_drains_the_daemon_like_sigterm(tmp_path: Path) -> None:
    # A closed terminal or a dropped ssh session sends SIGHUP: it killed the daemon on the
    # spot (exit -1, no drain, nothing logged).
    log = tmp_path / "d.log"
    daemon = Daemon(f"ipc://{tmp_path}/d.sock", tmp_path / "j.sqlite", log)
    try:
        await daemon.ready()
        daemon.proc.send_signal(signal.SIGHUP)
        assert await _exit_code(daemon) == 0
        assert [e["signal"] for e in _events(log, "daemon_stopping")] == ["SIGHUP"]
        assert len(_events(log, "daemon_drained")) == 1
    finally:
        daemon.close()


async def test_a_daemon_under_nohup_keeps_ignoring_sighup(tmp_path: Path) -> None:
    log = tmp_path / "d.log"
    daemon = Daemon(f"ipc://{tmp_path}/d.sock", tmp_path / "j.sqlite", log, ignore_sighup=True)
    try:
        await daemon.ready()
        daemon.proc.send_signal(signal.SIGHUP)  # ignored: the SIGTERM after it is what stops it
        daemon.proc.send_signal(signal.SIGTERM)
        assert await _exit_code(daemon) == 0
        assert [e["signal"] for e in _events(log, "daemon_stopping")] == ["SIGTERM"]
    finally:
        daemon.close()


async def test_a_second_stop_signal_ends_the_drain_at_once(tmp_path: Path) -> None:
    # The grace period is 60 s and the step lasts 60 s: a second signal ended nothing, the
    # operator waited the whole grace period (or reached for kill -9).
    address = f"ipc://{tmp_path}/d.sock"
    audit, log = tmp_path / "a.audit", tmp_path / "d.log"
    worker = Worker(address, audit, step_s=60)
    daemon = Daemon(address, tmp_path / "j.sqlite", log, "--grace-s", "60", "--capabilities", str(CAPS))
    try:
        await daemon.ready()
        async with open_client(address) as client:
            accepted = await request(client, Submit(manifest=manifest(1), inputs={"t.value": 1}))
            assert isinstance(accepted, SubmitAccepted)
            await wait_for_starts(audit, 1)
        daemon.proc.send_signal(signal.SIGTERM)
        await wait_log(log, "orchestrator_draining")
        daemon.proc.send_signal(signal.SIGINT)
        assert await _exit_code(daemon) == 0
        assert [e["signal"] for e in _events(log, "daemon_drain_cut_short")] == ["SIGINT"]
        assert [e["steps_still_running"] for e in _events(log, "daemon_drained")] == [1]
    finally:
        daemon.close()
        worker.close()


async def test_status_wait_outlasts_the_answer_timeout(tmp_path: Path) -> None:
    # The daemon holds a first Status(wait=True) silently: a run longer than the answer
    # timeout was reported "no answer ... (is the daemon up?)", exit 1, with the daemon up.
    address = f"ipc://{tmp_path}/d.sock"
    audit = tmp_path / "a.audit"
    worker = Worker(address, audit, step_s=2.5)
    daemon = Daemon(address, tmp_path / "j.sqlite", tmp_path / "d.log", "--capabilities", str(CAPS))
    try:
        await daemon.ready()
        async with open_client(address) as client:
            accepted = await request(client, Submit(manifest=manifest(1), inputs={"t.value": 1}))
            assert isinstance(accepted, SubmitAccepted)
            await wait_for_starts(audit, 1)
        async with open_client(address) as waiter:  # a fresh client: ``ontoflow status RUN --wait``
            with anyio.fail_after(20):
                # Under the 2.5 s run, and 1 s, not 0.5: the re-asked Status must be answered within
                # half of it, by a daemon on a loaded machine.
                ended = await follow(waiter, accepted.run_id, answer_timeout_s=1.0)
        assert isinstance(ended, RunStatus) and ended.status == "completed", ended
    finally:
        daemon.close()
        worker.close()



async def test_a_worker_started_before_its_daemon_connects_and_drains_on_sighup(tmp_path: Path) -> None:
    # SIGHUP killed a worker on the spot (exit 129): its running steps were lost to the daemon.
    address = f"ipc://{tmp_path}/d.sock"
    worker_log, log = tmp_path / "w.log", tmp_path / "d.log"
    worker = worker_process(address, "w-hup", worker_log)  # before the daemon: it must connect when it comes
    daemon = Daemon(address, tmp_path / "j.sqlite", log)
    try:
        await daemon.ready()
        await wait_log(worker_log, "worker_registered")
        worker.send_signal(signal.SIGHUP)
        with anyio.fail_after(15):
            assert await anyio.to_thread.run_sync(worker.wait) == 0
        assert [e["signal"] for e in _events(worker_log, "worker_stopping")] == ["SIGHUP"]
        await wait_log(log, "worker_disconnected")  # it said goodbye: not lost
    finally:
        stop(worker)
        daemon.close()


async def test_cancel_of_a_run_that_already_ended_says_nothing_was_cancelled(tmp_path: Path) -> None:
    # It printed the run's completed result and exit 0, nothing else: read as "cancelled".
    address = f"ipc://{tmp_path}/d.sock"
    worker = Worker(address, tmp_path / "a.audit", step_s=0.01)
    daemon = Daemon(address, tmp_path / "j.sqlite", tmp_path / "d.log", "--capabilities", str(CAPS))
    try:
        await daemon.ready()
        async with open_client(address) as client:
            accepted = await request(client, Submit(manifest=manifest(1), inputs={"t.value": 1}))
            assert isinstance(accepted, SubmitAccepted)
            with anyio.fail_after(20):
                ended = await follow(client, accepted.run_id, answered=True)
            assert isinstance(ended, RunStatus) and ended.status == "completed", ended
        done = await anyio.to_thread.run_sync(lambda: run_ontoflow(REPO, "cancel", accepted.run_id, "--connect", address))
        assert done.code == 0 and f"run {accepted.run_id} had already ended completed: nothing was cancelled" in done.stderr
        unknown = await anyio.to_thread.run_sync(lambda: run_ontoflow(REPO, "cancel", "nosuch", "--connect", address))
        assert unknown.code == 7 and "unknown_run" in unknown.stderr
    finally:
        daemon.close()
        worker.close()
