"""Plans and pipelines through the durable daemon, step output size limit, retention (real processes).

A daemon process with a journal, worker processes, and the real ``ontoflow submit`` CLI: a
plan and a pipeline submitted with ``--wait``; a plan run surviving ``kill -9`` of the daemon;
a malformed pipeline refused with the guard's paths; a too-large step output ending its step
``failure``; ended runs pruned by the periodic retention while an unfinished one stays.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from ontoflow.protocols.client import (
    ListRuns,
    RunList,
    RunStatus,
    Status,
    Submit,
    SubmitAccepted,
    Workers,
    WorkersInfo,
)
from ontoflow.runtime.cli import open_client, request
from tests.integration._cli import Ran, run_ontoflow
from tests.integration.durable_capabilities import BLOB_ID, STEP_ID, manifest, step_value
from tests.integration.durable_helpers import REPO, Daemon, Worker, journal_outcomes, wait_for_starts

pytestmark = pytest.mark.anyio

EXAMPLE = REPO / "configs" / "examples" / "pipelines"
PIPELINE = "configs/examples/pipelines/sqlite_to_csv.yaml"


def _plan(step_s_tag: str = "chain") -> dict[str, Any]:
    """a -> (b, c) -> d, every step ``t.durable.step``; the report records every output."""
    return {
        "name": f"durable-plan-{step_s_tag}",
        "combine_mode": "report",
        "steps": [
            {"id": "a", "capability": STEP_ID},
            {"id": "b", "capability": STEP_ID, "depends_on": ["a"]},
            {"id": "c", "capability": STEP_ID, "depends_on": ["a"]},
            {"id": "d", "capability": STEP_ID, "depends_on": ["b", "c"]},
        ],
    }


async def _wait_for_capability(client, capability: str) -> None:
    with anyio.fail_after(30):
        while True:
            info = await request(client, Workers())
            assert isinstance(info, WorkersInfo)
            if any(capability in w.capabilities for w in info.workers):
                return
            await anyio.sleep(0.02)  # re-asked: registration is the worker's move


async def _ontoflow(cwd: Path, *args: str) -> Ran:
    return await anyio.to_thread.run_sync(lambda: run_ontoflow(cwd, *args, env=_cli_env(), timeout=90))


def _cli_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


async def test_submit_wait_runs_a_plan_and_a_pipeline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    here = tmp_path / "here"
    target = here / "configs" / "examples" / "pipelines"
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns("*.db"))
    subprocess.run([sys.executable, str(target / "make_db.py")], check=True, capture_output=True)
    database = str(target / "users.db")
    # Resolved by the daemon from its own environment: never sent by the client, never journaled.
    monkeypatch.setenv("ONTOFLOW_CONNECTION_DEFAULT", json.dumps({"database": database}))
    address = f"ipc://{tmp_path}/d.sock"
    journal = tmp_path / "j.sqlite"
    plan_file = here / "plan.json"
    plan_file.write_text(json.dumps(_plan()))
    durable = Worker(address, tmp_path / "a.audit")
    builtin = subprocess.Popen([sys.executable, "-m", "ontoflow", "worker", "--connect", address], cwd=here,
                               env=_cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               stdin=subprocess.DEVNULL)
    daemon = Daemon(address, journal, tmp_path / "d.log")
    try:
        await daemon.ready()
        async with open_client(address) as client:
            await _wait_for_capability(client, STEP_ID)
            await _wait_for_capability(client, "sqlite.extractor")
        ran = await _ontoflow(here, "submit", str(plan_file), "--input", "t.value=2", "--wait", "--json",
                              "--connect", address)
        assert ran.code == 0, ran.stderr
        status = ran.json()
        assert status["status"] == "completed"
        report = status["context"]["ontoflow.plan.report"]
        assert report["a"]["outputs"]["t.value"] == step_value(2)
        assert report["d"]["outputs"]["t.value"] == step_value(step_value(step_value(2)))

        ran = await _ontoflow(here, "submit", PIPELINE, "--wait", "--json", "--connect", address)
        assert ran.code == 0, ran.stderr
        status = ran.json()
        assert status["status"] == "completed"
        assert [t["step_id"] for t in status["trace"]] == ["extract-users", "keep-adults", "write-users-csv"]
        with (here / "out" / "pipelines" / "users.csv").open(newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
        assert rows[0] == ["id", "user_name", "country"] and len(rows) > 1
    finally:
        daemon.close()
        durable.close()
        builtin.terminate()
        builtin.wait(timeout=10)
    stored = journal.read_bytes() + b"".join(p.read_bytes() for p in tmp_path.glob("j.sqlite-*"))
    assert b"@default" in stored  # the pipeline as submitted
    assert database.encode() not in stored  # the resolved connection never is


async def test_a_plan_run_survives_kill_9_of_the_daemon(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    journal = tmp_path / "j.sqlite"
    audit = tmp_path / "a.audit"
    worker = Worker(address, audit, step_s=0.3)
    daemon = Daemon(address, journal, tmp_path / "d.log")
    try:
        await daemon.ready()
        async with open_client(address) as client:
            await _wait_for_capability(client, STEP_ID)
            reference = await request(client, Submit(manifest=_plan(), inputs={"t.value": 7}))
            assert isinstance(reference, SubmitAccepted)
            expected = await request(client, Status(run_id=reference.run_id, wait=True), timeout_s=60)
            assert isinstance(expected, RunStatus) and expected.status == "completed"
            accepted = await request(client, Submit(manifest=_plan(), inputs={"t.value": 7}))
            assert isinstance(accepted, SubmitAccepted)
            # the reference ran 4 steps; a done, b and c dispatched together: kill while they run
            await wait_for_starts(audit, 4 + 2)
        daemon.kill()
        daemon = Daemon(address, journal, tmp_path / "d2.log")
        await daemon.ready()
        async with open_client(address) as client:
            done = await request(client, Status(run_id=accepted.run_id, wait=True), timeout_s=60)
        assert isinstance(done, RunStatus) and done.status == "completed", done
        assert done.context == expected.context  # parity of the combined output
        assert {e["block"] for e in done.trace} == {"a", "b", "c", "d"}
    finally:
        daemon.close()
        worker.close()


async def test_a_malformed_pipeline_is_refused_with_the_guards_paths(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "oml_version: '0.1.0'\nname: Bad_Name\nsteps:\n"
        "  - id: extract\n    component: sqlite.extractor\n    mode: pull\n    config: {query: 'SELECT 1', password: x}\n"
        "  - id: write\n    component: csv.writer\n    mode: write\n    needs: [nowhere]\n    config: {path: out/never.csv}\n"
    )
    daemon = Daemon(address, tmp_path / "j.sqlite", tmp_path / "d.log")
    try:
        await daemon.ready()
        ran = await _ontoflow(tmp_path, "submit", str(bad), "--wait", "--connect", address)
        assert ran.code == 2, ran.stderr
        assert "invalid_manifest" in ran.stderr
        for path in ("name", "steps[0].mode", "steps[0].config.password", "steps[1].needs[0]"):
            assert path in ran.stderr
        assert ran.stdout == ""
        async with open_client(address) as client:
            listing = await request(client, ListRuns())
            assert isinstance(listing, RunList) and listing.runs == []
    finally:
        daemon.close()


async def test_a_step_output_over_the_value_limit_fails_the_step_and_is_never_stored(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    journal = tmp_path / "j.sqlite"
    worker = Worker(address, tmp_path / "a.audit")
    daemon = Daemon(address, journal, tmp_path / "d.log", "--max-value-bytes", "1000")
    document = {
        "name": "blob",
        "start": "m",
        "nodes": {"m": {"entry_block": "big", "blocks": {
            "big": {"worker": BLOB_ID, "transitions": [{"on_signal": f"{BLOB_ID}.success", "action": "JUMP:after"},
                                                       {"on_signal": f"{BLOB_ID}.failure", "action": "JUMP:after"}]},
            "after": {"worker": STEP_ID},
        }}},
    }
    try:
        await daemon.ready()
        async with open_client(address) as client:
            await _wait_for_capability(client, BLOB_ID)
            small = await request(client, Submit(manifest=document, inputs={"t.size": 10, "t.value": 1}))
            big = await request(client, Submit(manifest=document, inputs={"t.size": 5000, "t.value": 1}))
            assert isinstance(small, SubmitAccepted) and isinstance(big, SubmitAccepted)
            ok = await request(client, Status(run_id=small.run_id, wait=True), timeout_s=30)
            refused = await request(client, Status(run_id=big.run_id, wait=True), timeout_s=30)
        assert isinstance(ok, RunStatus) and ok.status == "completed" and ok.context["t.blob"] == "x" * 10
        assert isinstance(refused, RunStatus) and refused.status == "completed"  # the failure was routed
        first = refused.trace[0]
        assert first["event"] == "failure" and first["reason"] == "output_too_large"
        assert [e["block"] for e in refused.trace] == ["big", "after"]
        assert "t.blob" not in refused.context
        assert "xxxxxxxxxxxx" not in json.dumps(refused.context) + json.dumps(refused.trace)
        outcomes = {(run, step): outputs for run, step, _, outputs in journal_outcomes(journal)}
        assert all(len(json.dumps(o)) < 1000 for o in outcomes.values())
        assert not any("t.blob" in o for (run, _), o in outcomes.items() if run == big.run_id)
    finally:
        daemon.close()
        worker.close()
    log = (tmp_path / "d.log").read_text()
    assert "step_output_too_large" in log and "x" * 50 not in log


async def test_periodic_retention_prunes_ended_runs_and_never_unfinished_ones(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    # t.durable.step takes a minute here: the run using it stays unfinished throughout
    worker = Worker(address, tmp_path / "a.audit", step_s=60)
    daemon = Daemon(address, tmp_path / "j.sqlite", tmp_path / "d.log", "--retention-s", "0.5", "--prune-every-s", "0.1")
    blob = {"name": "blob", "start": "m", "nodes": {"m": {"entry_block": "b", "blocks": {"b": {"worker": BLOB_ID}}}}}
    try:
        await daemon.ready()
        async with open_client(address) as client:
            await _wait_for_capability(client, BLOB_ID)
            unfinished = await request(client, Submit(manifest=manifest(1), inputs={"t.value": 1}))
            assert isinstance(unfinished, SubmitAccepted)
            ended = await request(client, Submit(manifest=blob, inputs={"t.size": 1}))
            assert isinstance(ended, SubmitAccepted)
            status = await request(client, Status(run_id=ended.run_id, wait=True), timeout_s=30)
            assert isinstance(status, RunStatus) and status.status == "completed"
            listing = await request(client, ListRuns())
            assert isinstance(listing, RunList) and {r.run_id for r in listing.runs} == {unfinished.run_id, ended.run_id}
            # The prune that drops the ended run used a cutoff past its end, hence past the
            # submission of the unfinished run (submitted before it): that one must remain.
            with anyio.fail_after(30):
                while True:
                    listing = await request(client, ListRuns())
                    assert isinstance(listing, RunList)
                    if ended.run_id not in {r.run_id for r in listing.runs}:
                        break
                    await anyio.sleep(0.05)  # re-asked: the prune is the daemon's periodic move
            assert [(r.run_id, r.status) for r in listing.runs] == [(unfinished.run_id, "running")]
    finally:
        daemon.close()
        worker.close()
