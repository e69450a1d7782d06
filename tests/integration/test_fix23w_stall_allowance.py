"""A worker process carrying a slow capability (a ten-minute timeout) and a fast one (300 ms):
a step of the fast one that blocks the event loop is a hung worker once its own allowance (its
timeout and a second's grace) is over, and the daemon takes the worker as lost a liveness
window later. Before, the heartbeat thread covered any stall for the longest allowance of every
capability the worker carried (the slow one's ten minutes): the worker hung in a fast step
looked alive all that time, and was sent more steps (here it was never lost: the loop turned
again five seconds on)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import anyio
import pytest

from ontoflow.actors.capability import load_capabilities
from ontoflow.protocols import manifest_from_data
from ontoflow.runtime.embedded import open_local_cluster

pytestmark = pytest.mark.anyio

CAPABILITIES = '''
import time
from ontoflow.actors.capability import Capability
from ontoflow.protocols import CapabilityMetadata, RetryPolicy

class Patient(Capability):
    metadata = CapabilityMetadata(id="test.capability.patient", timeout_ms=600_000, outputs=["test.patient"])

    async def execute(self, inputs, context):
        return {"test.patient": True}

class Quick(Capability):
    metadata = CapabilityMetadata(id="test.capability.quick", timeout_ms=300, outputs=["test.quick"],
                                  retry=RetryPolicy(max_retries=0))

    async def execute(self, inputs, context):
        time.sleep(5.0)  # blocks the event loop far past its own allowance (1.3 s), well within the patient one's
        return {"test.quick": True}
'''


async def test_a_fast_step_blocking_the_loop_is_covered_for_its_own_allowance_only(tmp_path: Path) -> None:
    module = tmp_path / "stall_caps.py"
    module.write_text(textwrap.dedent(CAPABILITIES))
    classes = load_capabilities([str(module)])
    manifest = manifest_from_data({"start": "m", "nodes": {"m": {"entry_block": "q", "blocks": {
        "q": {"worker": "test.capability.quick"}}}}})
    async with open_local_cluster(classes, [str(module)], transport="ipc", heartbeat_ms=100) as cluster:
        workers = cluster.orchestrator.pool.registry
        assert len(workers) == 1
        with anyio.fail_after(60):
            result = await cluster.run(cluster.compile(manifest), {})  # ended by the step's deadline, or the loss
        assert result.trace[0].event != "success", result.trace
        # The worker's loop stays blocked five seconds: past the fast step's allowance it is lost
        # (it registers again once its loop turns, and a backoff later: the empty registry is seen).
        with anyio.fail_after(30):
            while len(workers):
                await anyio.sleep(0.01)
