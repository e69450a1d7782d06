"""The durable daemon's client API, limits, SIGTERM drain and perception triggers (real processes)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from ontoflow.protocols.client import (
    Busy,
    Error,
    ListRuns,
    RunList,
    RunProgress,
    RunStatus,
    RunTrace,
    Show,
    Status,
    Submit,
    SubmitAccepted,
    Watch,
    Workers,
    WorkersInfo,
)
from ontoflow.runtime.cli import open_client, request
from tests.integration.durable_capabilities import manifest
from tests.integration.durable_helpers import REPO, Daemon, Worker, audit_lines, wait_for_starts

pytestmark = pytest.mark.anyio

EXAMPLE = REPO / "configs" / "examples" / "file_trigger" / "on_new_file.json"


async def _wait_for_capability(client, capability: str) -> None:
    with anyio.fail_after(20):
        while True:
            info = await request(client, Workers())
            assert isinstance(info, WorkersInfo)
            if any(capability in w.capabilities for w in info.workers):
                return
            await anyio.sleep(0.02)  # re-asked: registration is the worker's move


async def test_idempotency_show_watch_list_busy_and_payload_limit(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    audit = tmp_path / "a.audit"
    worker = Worker(address, audit, step_s=0.05)
    daemon = Daemon(address, tmp_path / "j.sqlite", tmp_path / "d.log", "--max-runs", "2", "--max-value-bytes", "100")
    try:
        await daemon.ready()
        async with open_client(address) as client:
            await _wait_for_capability(client, "t.durable.step")
            submit = Submit(manifest=manifest(3), inputs={"t.value": 1}, idempotency_key="once")
            first = await request(client, submit)
            again = await request(client, submit)
            assert isinstance(first, SubmitAccepted) and isinstance(again, SubmitAccepted)
            assert again.run_id == first.run_id and again.existing
            watch = await request(client, Watch(run_id=first.run_id))
            assert isinstance(watch, RunProgress)
            other = await request(client, Submit(manifest=manifest(3), inputs={"t.value": 2}))
            assert isinstance(other, SubmitAccepted)
            busy = await request(client, Submit(manifest=manifest(3), inputs={"t.value": 3}))
            assert isinstance(busy, Busy) and busy.limit == 2
            big = await request(client, Submit(manifest=manifest(3), inputs={"t.value": 1, "t.blob": "x" * 500},
                                               idempotency_key="big"))
            # busy is answered first; the size check is exercised once a slot frees (below)
            assert isinstance(big, Busy)
            steps = list(watch.steps)
            with anyio.fail_after(30):
                while True:
                    msg = (await client.recv_batch(1))[0]
                    if isinstance(msg, RunProgress):
                        steps += msg.steps
                        continue
                    assert isinstance(msg, RunStatus) and msg.status == "completed"
                    break
            assert [s["block"] for s in steps] == ["b0", "b1", "b2"]
            done = await request(client, Status(run_id=other.run_id, wait=True), timeout_s=30)
            assert isinstance(done, RunStatus) and done.status == "completed"
            big = await request(client, Submit(manifest=manifest(3), inputs={"t.value": 1, "t.blob": "x" * 500}))
            assert isinstance(big, Error) and big.code == "payload_too_large" and "t.blob" in big.message
            assert "xxx" not in big.message
            listing = await request(client, ListRuns(status="completed", limit=10))
            assert isinstance(listing, RunList) and {r.run_id for r in listing.runs} == {first.run_id, other.run_id}
            shown = await request(client, Show(run_id=first.run_id))
            assert isinstance(shown, RunTrace) and shown.status == "completed"
            kinds = [e["kind"] for e in shown.events]
            assert kinds[0] == "run_submitted" and kinds.count("dispatched") == 3 and kinds.count("step_finished") == 3
            assert [e["action"] for e in shown.trace] == ["JUMP:b1", "JUMP:b2", None]
        assert daemon.terminate() == 0
        # after a restart the journal still answers for the ended runs and the key
        daemon = Daemon(address, tmp_path / "j.sqlite", tmp_path / "d2.log")
        await daemon.ready()
        async with open_client(address) as client:
            shown = await request(client, Show(run_id=first.run_id))
            assert isinstance(shown, RunTrace) and shown.context["t.value"] == 40  # 1 -> 4 -> 13 -> 40 (3 steps)
            await _wait_for_capability(client, "t.durable.step")
            again = await request(client, submit)
            assert isinstance(again, SubmitAccepted) and again.run_id == first.run_id
    finally:
        daemon.close()
        worker.close()


async def test_sigterm_lets_the_running_step_finish_and_exits_0(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    audit = tmp_path / "a.audit"
    worker = Worker(address, audit, step_s=0.5)
    journal = tmp_path / "j.sqlite"
    daemon = Daemon(address, journal, tmp_path / "d.log")
    try:
        await daemon.ready()
        async with open_client(address) as client:
            await _wait_for_capability(client, "t.durable.step")
            accepted = await request(client, Submit(manifest=manifest(2), inputs={"t.value": 5}))
            assert isinstance(accepted, SubmitAccepted)
            await wait_for_starts(audit, 1)
            assert await anyio.to_thread.run_sync(daemon.terminate) == 0
            # the running step answered within the grace period: its outcome is journaled,
            # the next step was held back, and the successor resumes the run from there
            assert [r["phase"] for r in audit_lines(audit)] == ["start", "done"]
            daemon = Daemon(address, journal, tmp_path / "d2.log")
            await daemon.ready()
            await _wait_for_capability(client, "t.durable.step")
            status = await request(client, Status(run_id=accepted.run_id, wait=True), timeout_s=30)
            assert isinstance(status, RunStatus) and status.status == "completed"
            assert [e["block"] for e in status.trace] == ["b0", "b1"]
            assert len([r for r in audit_lines(audit) if r["phase"] == "start"]) == 2
    finally:
        daemon.close()
        worker.close()


async def test_a_file_dropped_in_a_watched_folder_starts_exactly_one_run(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    env = dict(os.environ, ONTOFLOW_WATCH_DIR=str(inbox), ONTOFLOW_WATCH_INTERVAL_MS="20", ONTOFLOW_WATCH_REANNOUNCE="2",
               PYTHONPATH=str(REPO))
    worker = subprocess.Popen([sys.executable, "-m", "ontoflow", "worker", "--connect", address], cwd=REPO, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    daemon = Daemon(address, tmp_path / "j.sqlite", tmp_path / "d.log", "--trigger-workflow", str(EXAMPLE))
    try:
        await daemon.ready()
        async with open_client(address) as client:
            await _wait_for_capability(client, "fs.directory_watcher")

            async def completed(n: int) -> list:
                with anyio.fail_after(30):
                    while True:
                        listing = await request(client, ListRuns(limit=100))
                        assert isinstance(listing, RunList)
                        if sum(r.status == "completed" for r in listing.runs) >= n:
                            return listing.runs
                        await anyio.sleep(0.02)  # re-asked: the run is the daemon's move

            def drop(name: str, text: str) -> None:
                # Whole or not at all, as a user drops a file: a file caught half-written (size 0,
                # then 5) would be two observations, as a rewritten file is.
                staged = tmp_path / name
                staged.write_text(text)
                os.replace(staged, inbox / name)

            drop("first.txt", "hello")
            runs = await completed(1)
            status = await request(client, Status(run_id=runs[0].run_id))
            assert isinstance(status, RunStatus)
            assert status.context["fs.file.name"] == "first.txt"
            assert status.context["ontoflow.observation"]["kind"] == "file_created"
            # the first file is announced again every other poll meanwhile: no second run for it
            drop("second.txt", "world")
            runs = await completed(2)
            assert len(runs) == 2
    finally:
        daemon.close()
        worker.terminate()
        worker.wait(timeout=10)
