"""Soak: many runs while the local worker process keeps crashing mid-step.

The short version (one crash) is test_worker_crash.py, in ``make test``; this loop is in
``make soak``. Every run must complete exactly once, each on its second attempt at most per
crash, with the supervisor restarting the worker every time.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import anyio
import pytest

from ontoflow.actors.capability import load_capabilities
from ontoflow.protocols import manifest_from_data
from ontoflow.runtime.embedded import open_local_cluster

pytestmark = [pytest.mark.anyio, pytest.mark.soak]

FLAKY = '''
import os
from pathlib import Path
from ontoflow.actors.capability import Capability
from ontoflow.protocols import CapabilityMetadata

FOLDER = Path({folder!r})

class CrashEveryOther(Capability):
    """Crashes its worker process on the first attempt of every run."""
    metadata = CapabilityMetadata(
        id="test.capability.crash_every_other",
        input_schema={{"type": "object", "properties": {{"test.run": {{"type": "integer"}}}}, "required": ["test.run"]}},
        outputs=["test.done"],
        idempotent=True,
    )

    async def execute(self, inputs, context):
        marker = FOLDER / f"run-{{inputs['test.run']}}"
        if not marker.exists():
            marker.write_text("crashed")
            os._exit(7)
        return {{"test.done": inputs["test.run"]}}
'''

ROUNDS = 12


async def test_runs_survive_repeated_worker_crashes(tmp_path: Path) -> None:
    module = tmp_path / "flaky.py"
    module.write_text(textwrap.dedent(FLAKY.format(folder=str(tmp_path))))
    classes = load_capabilities([str(module)])
    manifest = manifest_from_data(
        {"start": "m", "nodes": {"m": {"entry_block": "c", "blocks": {"c": {"worker": "test.capability.crash_every_other"}}}}}
    )
    async with open_local_cluster(
        classes, [str(module)], transport="ipc", heartbeat_ms=100, max_restarts=ROUNDS + 1, restart_window_s=600
    ) as cluster:
        workflow = cluster.compile(manifest)
        for i in range(ROUNDS):
            with anyio.fail_after(30):
                result = await cluster.run(workflow, {"test.run": i})
            assert result.status == "completed", result.error
            assert result.context["test.done"] == i
            assert [e.attempt for e in result.trace] == [2]
