"""The daemon's spool sweeper: told of ended runs by its hook, it removes their folders."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from ontoflow.actors.capabilities.data import DatasetSpool, spool_path
from ontoflow.actors.orchestrator import RunResult
from ontoflow.protocols import StepContext
from ontoflow.protocols.context import SystemMetadata
from ontoflow.runtime.daemon_spools import SpoolSweeper


def _ended(run_id: str) -> RunResult:
    return RunResult(run_id=run_id, status="completed", error=None, context={}, trace=[], started_ms=0, ended_ms=1)


@pytest.mark.anyio
async def test_the_sweep_removes_the_folders_of_the_runs_its_hook_was_given(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)  # re-read TMPDIR
    for run_id in ("r1", "r2", "live"):
        context = StepContext(system=SystemMetadata(run_id=run_id, step_id="s1"))
        with DatasetSpool(spool_path(None, context), ["a"]) as spool:
            spool.write([[1]])
    root = tmp_path / f"ontoflow-spool-{os.getuid()}"
    sweeper = SpoolSweeper(every_s=0.001)
    hooks = [sweeper.ended]  # as the daemon wires it: ``orchestrator.on_run_ended``
    for run_id in ("r1", "r2"):
        for hook in hooks:
            hook(_ended(run_id))
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(sweeper.run)
            while sorted(p.name for p in root.iterdir()) != ["live"]:
                await anyio.sleep(0.001)  # a poll on the condition, not a wait for time
            tg.cancel_scope.cancel()
    # A run that ends later is swept by a later sweep (the hook still feeds the same list).
    sweeper.ended(_ended("live"))
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(sweeper.run)
            while root.exists() and any(root.iterdir()):
                await anyio.sleep(0.001)
            tg.cancel_scope.cancel()
