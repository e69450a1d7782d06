"""The spool sweeper holds a bounded list of ended runs (red team, session 21): it held every
ended run's result until the next sweep, so a sweep thread that hung (a spool folder on a dead
network mount) grew the list by a result per run for as long as it hung. Past ``most`` the
oldest are let go: their folders stay on disk (as those of runs ended just before a stop), and
the next sweep says so once (real spool folders, a real sweep thread)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from structlog.testing import capture_logs

from ontoflow.actors.capabilities.data import DatasetSpool, spool_path
from ontoflow.actors.orchestrator import RunResult
from ontoflow.protocols import StepContext
from ontoflow.protocols.context import SystemMetadata
from ontoflow.runtime.daemon_spools import MAX_HELD, SpoolSweeper


def _ended(run_id: str) -> RunResult:
    return RunResult(run_id=run_id, status="completed", error=None, context={}, trace=[], started_ms=0, ended_ms=1)


def test_the_runs_held_between_two_sweeps_are_bounded() -> None:
    sweeper = SpoolSweeper()
    for n in range(MAX_HELD + 5_000):  # no sweep runs: as when its thread hangs
        sweeper.ended(_ended(f"r{n}"))
    assert sweeper.held == MAX_HELD


@pytest.mark.anyio
async def test_past_the_bound_the_oldest_keep_their_folders_and_the_sweep_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)  # re-read TMPDIR
    runs = [f"r{n}" for n in range(5)]
    for run_id in runs:
        context = StepContext(system=SystemMetadata(run_id=run_id, step_id="s1"))
        with DatasetSpool(spool_path(None, context), ["a"]) as spool:
            spool.write([[1]])
    root = tmp_path / f"ontoflow-spool-{os.getuid()}"
    sweeper = SpoolSweeper(every_s=0.001, most=3)
    for run_id in runs:
        sweeper.ended(_ended(run_id))
    assert sweeper.held == 3
    with capture_logs() as logs, anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(sweeper.run)
            while sorted(p.name for p in root.iterdir()) != ["r0", "r1"]:
                await anyio.sleep(0.001)  # a poll on the condition, not a wait for time
            tg.cancel_scope.cancel()
    skipped = [e for e in logs if e["event"] == "run_spools_skipped"]
    assert len(skipped) == 1 and skipped[0]["held"] == 3
