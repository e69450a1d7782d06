"""A local worker process that crashes mid-step is restarted by its supervisor, and the
orchestrator re-dispatches the idempotent step it lost to the new process."""

from __future__ import annotations

import textwrap
from pathlib import Path

import anyio
import pytest
import structlog

from ontoflow.actors.capability import load_capabilities
from ontoflow.protocols import manifest_from_data
from ontoflow.runtime.embedded import open_local_cluster

pytestmark = pytest.mark.anyio

CRASHY = '''
import os
from pathlib import Path
from ontoflow.actors.capability import Capability
from ontoflow.protocols import CapabilityMetadata

MARKER = Path({marker!r})

class Crashy(Capability):
    """Kills its own worker process the first time it runs (as a segfault would)."""
    metadata = CapabilityMetadata(id="test.capability.crashy", outputs=["test.pid"], idempotent=True)

    async def execute(self, inputs, context):
        if not MARKER.exists():
            MARKER.write_text("crashed once")
            os._exit(3)
        return {{"test.pid": os.getpid()}}
'''


async def test_crashed_worker_process_is_restarted_and_the_step_redispatched(tmp_path: Path) -> None:
    module = tmp_path / "crashy.py"
    module.write_text(textwrap.dedent(CRASHY.format(marker=str(tmp_path / "marker"))))
    classes = load_capabilities([str(module)])
    manifest = manifest_from_data(
        {"start": "m", "nodes": {"m": {"entry_block": "c", "blocks": {"c": {"worker": "test.capability.crashy"}}}}}
    )
    with structlog.testing.capture_logs() as logs:
        async with open_local_cluster(classes, [str(module)], transport="ipc", heartbeat_ms=100) as cluster:
            first_pid = next(iter(cluster.orchestrator.registry)).pid
            with anyio.fail_after(30):
                result = await cluster.run(cluster.compile(manifest), {})
    assert result.status == "completed", result.error
    assert result.trace[-1].attempt == 2
    assert result.context["test.pid"] != first_pid
    events = [e["event"] for e in logs]
    assert "actor_crashed" in events
    assert "worker_lost" in events or "worker_ready" in events


async def test_local_worker_processes_run_at_a_lower_cpu_priority(tmp_path: Path) -> None:
    """The orchestrator is the serial part every step passes through: local workers yield to it."""
    psutil = pytest.importorskip("psutil")
    module = tmp_path / "crashy.py"
    module.write_text(textwrap.dedent(CRASHY.format(marker=str(tmp_path / "marker"))))
    classes = load_capabilities([str(module)])
    own = psutil.Process().nice()
    async with open_local_cluster(classes, [str(module)], transport="ipc", workers=2, worker_nice=3) as cluster:
        pids = [worker.pid for worker in cluster.orchestrator.registry]
        assert len(pids) == 2
        assert [psutil.Process(pid).nice() for pid in pids] == [min(own + 3, 19)] * 2
