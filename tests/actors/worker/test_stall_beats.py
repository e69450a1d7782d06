"""A step that blocks its worker's event loop (``time.sleep`` inside ``async def execute``) no
longer costs the worker: a thread of its own heartbeats meanwhile (``_stall_beats``), so the
daemon does not take it as lost and the step is answered once, by the worker running it.
Before, the worker's heartbeats stopped with its loop: a liveness window later the daemon
declared it lost, and the step ended ``worker_lost`` (or ran again elsewhere).

A loop blocked past the allowance is hung: the thread stops beating (``beat_due``), and the
daemon's loss detection applies as to a dead process."""

from __future__ import annotations

import textwrap
from pathlib import Path

import anyio
import pytest

from ontoflow.actors.capability import Capability, load_capabilities
from ontoflow.actors.worker._stall_beats import DEFAULT_MAX_STALL_S, beat_due, stall_allowance_ms
from ontoflow.protocols import CapabilityMetadata, manifest_from_data
from ontoflow.runtime.embedded import open_local_cluster

pytestmark = pytest.mark.anyio

BLOCKER = '''
import time
from ontoflow.actors.capability import Capability
from ontoflow.protocols import CapabilityMetadata

class Blocker(Capability):
    metadata = CapabilityMetadata(id="test.capability.blocker", outputs=["test.blocked"])

    async def execute(self, inputs, context):
        time.sleep(2.0)  # blocks the event loop for twenty heartbeat intervals (seven windows)
        return {"test.blocked": True}
'''


async def test_a_step_blocking_the_event_loop_does_not_lose_its_worker(tmp_path: Path) -> None:
    module = tmp_path / "blocker.py"
    module.write_text(textwrap.dedent(BLOCKER))
    classes = load_capabilities([str(module)])
    manifest = manifest_from_data({"start": "m", "nodes": {"m": {"entry_block": "b", "blocks": {
        "b": {"worker": "test.capability.blocker"}}}}})
    async with open_local_cluster(classes, [str(module)], transport="ipc", heartbeat_ms=100) as cluster:
        with anyio.fail_after(60):
            result = await cluster.run(cluster.compile(manifest), {})
    assert result.status == "completed", result.error
    assert result.context["test.blocked"] is True
    step = result.trace[0]
    assert (step.event, step.attempt, step.reason) == ("success", 1, None), step


class Timed(Capability):
    metadata = CapabilityMetadata(id="test.timed", timeout_ms=2_000)

    async def execute(self, inputs, context):
        return None


class Untimed(Timed):
    metadata = CapabilityMetadata(id="test.untimed", timeout_ms=None)


def test_hung_means_blocked_past_the_longest_timeout_and_a_grace_or_the_max_stall() -> None:
    assert stall_allowance_ms([Timed()], DEFAULT_MAX_STALL_S) == 3_000
    assert stall_allowance_ms([Timed(), Untimed()], 7.0) == 7_000
    assert stall_allowance_ms([Timed()], 2.5) == 2_500  # a long declared timeout is held to the max stall too
    # Beats only while the loop has not turned for an interval, one per interval, until hung.
    assert not beat_due(now=1_050, turned=1_000, last_beat=0, interval_ms=100, allowance_ms=3_000)
    assert beat_due(now=1_100, turned=1_000, last_beat=0, interval_ms=100, allowance_ms=3_000)
    assert not beat_due(now=1_150, turned=1_000, last_beat=1_100, interval_ms=100, allowance_ms=3_000)
    assert beat_due(now=4_000, turned=1_000, last_beat=3_900, interval_ms=100, allowance_ms=3_000)
    assert not beat_due(now=4_001, turned=1_000, last_beat=3_900, interval_ms=100, allowance_ms=3_000)
