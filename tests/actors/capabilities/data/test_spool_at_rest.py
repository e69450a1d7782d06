"""Spooled rows are data at rest: owner-only folders and files, no way out of the work folder,
and a daemon removes a run's spool when the run ends (real daemon and worker processes)."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from ontoflow.actors.capabilities.data import DatasetSpool, remove_run_spool, remove_runs_spools, run_spool_folder, spool_path
from ontoflow.actors.errors import PermanentError
from ontoflow.protocols import StepContext
from ontoflow.protocols.client import RunStatus, Status, Submit, SubmitAccepted, Workers, WorkersInfo
from ontoflow.protocols.context import SystemMetadata
from ontoflow.runtime.cli import open_client, request
from tests.integration.durable_helpers import REPO, Daemon

pytestmark = pytest.mark.anyio


def _context(run_id: str, step_id: str = "s1") -> StepContext:
    return StepContext(system=SystemMetadata(run_id=run_id, step_id=step_id))


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_spool_folders_are_0700_and_files_0600(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)  # re-read TMPDIR
    old = os.umask(0o022)
    try:
        target = spool_path(None, _context("r1"))
        with DatasetSpool(target, ["a"]) as spool:
            spool.write([[1]])
    finally:
        os.umask(old)
    root = tmp_path / f"ontoflow-spool-{os.getuid()}"
    assert target.parent == root / "r1"
    assert _mode(root) == 0o700 and _mode(root / "r1") == 0o700 and _mode(target) == 0o600
    assert remove_run_spool("r1") and not (root / "r1").exists()
    assert not remove_run_spool("r1")


def test_a_sweep_removes_the_folders_of_the_runs_it_is_given_and_nothing_else(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)  # re-read TMPDIR
    assert remove_runs_spools(["r1", "r2"]) == 0  # no work folder yet
    for run_id in ("r1", "r2", "../r3", "kept"):
        with DatasetSpool(spool_path(None, _context(run_id)), ["a"]) as spool:
            spool.write([[1]])
    root = tmp_path / f"ontoflow-spool-{os.getuid()}"
    assert remove_runs_spools(["r1", "never-spooled", "../r3", "r2"]) == 3
    assert sorted(p.name for p in root.iterdir()) == ["kept"]


def test_a_run_id_never_leads_out_of_the_work_folder(tmp_path: Path) -> None:
    work = tmp_path / "work"
    for run_id in ("../escape", "..", ".", "a/../../b", "/etc"):
        folder = run_spool_folder(str(work), run_id)
        assert folder.parent == work and folder.name not in ("", ".", ".."), run_id
    path = spool_path(str(work), _context("../escape", "../../s"))
    assert path.resolve().is_relative_to(work.resolve())


async def test_a_daemon_removes_a_plan_runs_spool_when_it_ends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the daemon's and the worker's temporary folder
    database = tmp_path / "db.sqlite"
    with sqlite3.connect(database) as conn:
        conn.execute("CREATE TABLE t (id INTEGER)")
        conn.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(5)])
    conn.close()
    plan = {"name": "spool", "steps": [{"id": "extract", "capability": "sqlite.extractor",
                                        "params": {"data.database": str(database), "data.query": "SELECT id FROM t"}}]}
    address = f"ipc://{tmp_path}/d.sock"
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    worker = subprocess.Popen([sys.executable, "-m", "ontoflow", "worker", "--connect", address], cwd=tmp_path, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    daemon = Daemon(address, tmp_path / "j.sqlite", tmp_path / "d.log")
    try:
        await daemon.ready()
        async with open_client(address) as client:
            with anyio.fail_after(30):
                while True:
                    info = await request(client, Workers())
                    assert isinstance(info, WorkersInfo)
                    if any("sqlite.extractor" in w.capabilities for w in info.workers):
                        break
                    await anyio.sleep(0.02)  # re-asked: registration is the worker's move
            accepted = await request(client, Submit(manifest=plan))
            assert isinstance(accepted, SubmitAccepted)
            status = await request(client, Status(run_id=accepted.run_id, wait=True), timeout_s=60)
            assert isinstance(status, RunStatus) and status.status == "completed", status
        folder = tmp_path / f"ontoflow-spool-{os.getuid()}" / accepted.run_id
        assert Path(status.context["data.dataset"]["path"]) == folder / "extract.rows"  # it spooled there
        with anyio.fail_after(10):
            while folder.exists():
                await anyio.sleep(0.01)  # removed by the daemon's run-end hook, in its process
    finally:
        daemon.close()
        worker.terminate()
        worker.wait(timeout=10)


def test_a_link_planted_where_the_run_folder_goes_is_refused(tmp_path: Path) -> None:
    # Whoever can write a shared work folder can name a run's folder ahead of it; a link there
    # to a folder of ours passed the owner check, and the spool went wherever it led.
    work, ours = tmp_path / "shared", tmp_path / "private"
    work.mkdir()
    ours.mkdir()
    (work / "r1").symlink_to(ours)
    with pytest.raises(PermanentError, match="symbolic link"):
        spool_path(str(work), _context("r1"))
    assert list(ours.iterdir()) == []
