"""Cancelling a parallel plan in the middle, through the daemon, with a real worker process."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from ontoflow.protocols.client import CancelRun, RunStatus, Status, Submit, SubmitAccepted, Workers, WorkersInfo
from ontoflow.runtime.cli import open_client, request
from tests.integration.durable_capabilities import STEP_ID
from tests.integration.durable_helpers import Daemon, Worker, audit_lines, wait_for_starts

pytestmark = pytest.mark.anyio


async def test_a_cancelled_parallel_plan_reports_every_step_and_the_daemon_goes_on(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    audit = tmp_path / "a.audit"
    worker = Worker(address, audit, step_s=30)  # the steps would run 30 s: only the cancel ends them
    daemon = Daemon(address, tmp_path / "j.sqlite", tmp_path / "d.log")
    plan = {"execution_mode": "parallel", "max_concurrency": 2, "combine_mode": "report",
            "steps": [{"id": s, "capability": STEP_ID} for s in ("a", "b", "c", "d")]}
    try:
        await daemon.ready()
        async with open_client(address) as client:
            with anyio.fail_after(30):
                while True:
                    info = await request(client, Workers())
                    assert isinstance(info, WorkersInfo)
                    if any(STEP_ID in w.capabilities for w in info.workers):
                        break
                    await anyio.sleep(0.02)  # re-asked: registration is the worker's move
            accepted = await request(client, Submit(manifest=plan, inputs={"t.value": 1}))
            assert isinstance(accepted, SubmitAccepted)
            await wait_for_starts(audit, 2)
            await request(client, CancelRun(run_id=accepted.run_id, reason="user"))
            with anyio.fail_after(20):
                done = await request(client, Status(run_id=accepted.run_id, wait=True), timeout_s=20)
            assert isinstance(done, RunStatus) and done.status == "cancelled"
            # Before: the report named a and b only; c and d, never begun, were not there.
            assert done.context["ontoflow.plan.steps"] == {s: "cancelled" for s in ("a", "b", "c", "d")}
            assert list(done.context["ontoflow.plan.report"]) == ["a", "b", "c", "d"]
            assert sorted((t["step_id"], t["event"]) for t in done.trace) == [("a", "cancelled"), ("b", "cancelled")]
            assert {r["step"] for r in audit_lines(audit) if r["phase"] == "start"} == {"a", "b"}
    finally:
        daemon.close()
        worker.close()
