"""An idempotency key re-sent with other inputs is a clear conflict, never the old run silently;
re-sent as it was, it is the same run, before and after a daemon restart (the fingerprint is
rebuilt from the journal)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from ontoflow.protocols.client import Error, Submit, SubmitAccepted, Workers, WorkersInfo
from ontoflow.runtime.cli import open_client, request
from tests.integration.durable_capabilities import manifest
from tests.integration.durable_helpers import Daemon, Worker

pytestmark = pytest.mark.anyio


async def _worker_registered(client) -> None:
    with anyio.fail_after(30):
        while True:
            info = await request(client, Workers())
            if isinstance(info, WorkersInfo) and any("t.durable.step" in w.capabilities for w in info.workers):
                return
            await anyio.sleep(0.02)  # re-asked: registration is the worker's move


async def test_a_reused_key_with_other_inputs_is_a_conflict_before_and_after_a_restart(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    journal = tmp_path / "j.sqlite"
    worker = Worker(address, tmp_path / "a.audit", step_s=0.01)
    daemon = Daemon(address, journal, tmp_path / "d.log")
    same = Submit(manifest=manifest(2), inputs={"t.value": 1}, idempotency_key="nightly-2026-11-23")
    other = Submit(manifest=manifest(2), inputs={"t.value": 2}, idempotency_key="nightly-2026-11-23")
    try:
        await daemon.ready()
        async with open_client(address) as client:
            await _worker_registered(client)
            first = await request(client, same)
            assert isinstance(first, SubmitAccepted) and not first.existing
            again = await request(client, same)
            assert isinstance(again, SubmitAccepted) and again.existing and again.run_id == first.run_id
            refused = await request(client, other)
            assert isinstance(refused, Error) and refused.code == "idempotency_conflict"
            assert "nightly-2026-11-23" in refused.message and "t.value" not in refused.message
        daemon.kill()
        daemon = Daemon(address, journal, tmp_path / "d2.log")
        await daemon.ready()
        async with open_client(address) as client:
            await _worker_registered(client)
            still = await request(client, same)
            assert isinstance(still, SubmitAccepted) and still.existing and still.run_id == first.run_id
            refused = await request(client, other)
            assert isinstance(refused, Error) and refused.code == "idempotency_conflict"
    finally:
        daemon.close()
        worker.close()


async def test_a_daemon_refuses_a_document_the_checker_refuses_with_its_report(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    worker = Worker(address, tmp_path / "a.audit", step_s=0.01)
    daemon = Daemon(address, tmp_path / "j.sqlite", tmp_path / "d.log")
    try:
        await daemon.ready()
        async with open_client(address) as client:
            await _worker_registered(client)
            refused = await request(client, Submit(manifest=manifest(2)))  # t.value is provided nowhere
            assert isinstance(refused, Error) and refused.code == "invalid_manifest"
            assert "contract check" in refused.message and "[missing-input]" in refused.message
            assert "required input 't.value'" in refused.message
            accepted = await request(client, Submit(manifest=manifest(2), inputs={"t.value": 1}))
            assert isinstance(accepted, SubmitAccepted)  # the submit's input keys count as provided
    finally:
        daemon.close()
        worker.close()


async def test_check_connect_checks_against_the_daemons_catalogue(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    from tests.integration.durable_helpers import REPO

    address = f"ipc://{tmp_path}/d.sock"
    worker = Worker(address, tmp_path / "a.audit", step_s=0.01)
    daemon = Daemon(address, tmp_path / "j.sqlite", tmp_path / "d.log")
    (tmp_path / "wf.json").write_text(json.dumps(manifest(2)))
    try:
        await daemon.ready()
        async with open_client(address) as client:
            await _worker_registered(client)

        def check(*extra: str) -> subprocess.CompletedProcess:
            return subprocess.run([sys.executable, "-m", "ontoflow", "check", str(tmp_path / "wf.json"), "--connect",
                                   address, "--json", *extra], cwd=REPO, capture_output=True, text=True, timeout=60)

        found = await anyio.to_thread.run_sync(check)
        assert found.returncode == 2, found.stderr  # the daemon knows t.durable.step: t.value is missing
        report = json.loads(found.stdout)
        assert any(f["kind"] == "missing-input" and "t.value" in f["message"] for f in report["findings"])
        assert not any(f["kind"] == "unknown-capability" for f in report["findings"])
    finally:
        daemon.close()
        worker.close()
    gone = await anyio.to_thread.run_sync(lambda: subprocess.run(
        [sys.executable, "-m", "ontoflow", "check", str(tmp_path / "wf.json"), "--connect", address, "--timeout", "1"],
        cwd=REPO, capture_output=True, text=True, timeout=60))
    assert gone.returncode == 1 and "no answer" in gone.stderr
