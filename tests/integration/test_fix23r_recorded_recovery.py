"""A real daemon started on a journal holding runs in flight whose plan and pipeline a rule of
this version refuses (accepted by the version before) recovers them and runs them to their end
on a real worker; the same documents submitted to it fresh are refused (fix23r).

Before: the daemon logged ``run_unrecoverable`` for each at its start and left them ``running``
for ever (a Status wait never answered). The journal is written as the version before left it:
the pinned source (``t.durable.step`` as it registered then, with two fan-out rules) and the
submit, nothing dispatched yet.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import msgspec
import pytest

from ontoflow.actors.orchestrator import Durability, WorkflowSource
from ontoflow.actors.orchestrator.engine import RunSubmitted
from ontoflow.protocols import ArrayParam, Decomposition
from ontoflow.protocols.client import Error, RunStatus, Status, Submit, Workers, WorkersInfo
from ontoflow.runtime.cli import open_client, request
from ontoflow.runtime.journal import RunRow, open_journal
from tests.integration.durable_capabilities import STEP_ID, DurableStep, step_value
from tests.integration.durable_helpers import Daemon, Worker

import anyio

pytestmark = pytest.mark.anyio

# As it registered then: two fan-out rules, t.others no input of it.
_PINNED = msgspec.structs.replace(DurableStep.metadata, decomposition=Decomposition(array_params=[
    ArrayParam(param_name="t.values", single_param_name="t.value", max_concurrency=2),
    ArrayParam(param_name="t.others", single_param_name="t.other", max_concurrency=2)]))

PLAN = {"name": "two-lists", "combine_mode": "report", "steps": [
    {"id": "a", "capability": STEP_ID, "params": {"t.values": [1, 2], "t.others": [3, 4]}}]}
# The name ends in a newline, and t.value is given under both its names (the last one won).
PIPELINE = {"oml_version": "0.1.0", "name": "durable-rows\n", "steps": [
    {"id": "step-once", "component": STEP_ID, "mode": "transform", "config": {"value": 5, "t.value": 6}}]}


def _journal_as_before(path: Path, runs: dict[str, tuple[str, dict[str, Any]]]) -> None:
    with open_journal(path) as journal:
        writer = Durability(journal)
        for run_id, (kind, document) in runs.items():
            body = msgspec.msgpack.encode(WorkflowSource(manifest=document, catalog={STEP_ID: _PINNED}, kind=kind))
            source_hash = hashlib.sha256(body).hexdigest()
            writer.submitted(RunRow(run_id=run_id, source_hash=source_hash, submitted_ms=0), (source_hash, body))
            writer.fact(run_id, RunSubmitted(run_id=run_id, inputs={}, now_ms=0))
        writer.commit()


async def test_a_new_daemon_recovers_runs_a_new_rule_would_refuse_and_runs_them_to_their_end(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    journal = tmp_path / "j.sqlite"
    _journal_as_before(journal, {"plan-run": ("plan", PLAN), "pipeline-run": ("pipeline", PIPELINE)})
    worker = Worker(address, tmp_path / "a.audit")
    daemon = Daemon(address, journal, tmp_path / "d.log")
    try:
        await daemon.ready()
        async with open_client(address) as client:
            plan = await request(client, Status(run_id="plan-run", wait=True), timeout_s=60)
            pipeline = await request(client, Status(run_id="pipeline-run", wait=True), timeout_s=60)
            assert isinstance(plan, RunStatus) and plan.status == "completed", plan
            assert plan.context["ontoflow.plan.report"]["a"]["outputs"]["t.value"] == [step_value(1), step_value(2)]
            assert isinstance(pipeline, RunStatus) and pipeline.status == "completed", pipeline
            assert pipeline.context["ontoflow.plan.report"]["step-once"]["outputs"]["t.value"] == step_value(6)
            with anyio.fail_after(30):
                while not isinstance(info := await request(client, Workers()), WorkersInfo) or not info.workers:
                    await anyio.sleep(0.02)  # re-asked: registration is the worker's move
            # A fresh submit is held to the new rules (the plan's: in the orchestrator's tests, as
            # no worker here declares two fan-out rules now).
            for document, path in ((PIPELINE, "name"), ({**PIPELINE, "name": "durable-rows"}, "steps[0].config.t.value")):
                refused = await request(client, Submit(manifest=document))
                assert isinstance(refused, Error) and refused.code == "invalid_manifest", refused
                assert f"{path}: " in refused.message, refused
    finally:
        daemon.close()
        worker.close()
    assert "run_unrecoverable" not in (tmp_path / "d.log").read_text()
