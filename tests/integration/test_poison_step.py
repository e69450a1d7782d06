"""A step that kills every worker process it lands on (a poison pill) ends ``failure``.

Real worker processes over ipc, restarted by the embedded cluster's supervisor. The step is
idempotent, so a lost attempt goes out again; it went out forever before ``MAX_LOST_ATTEMPTS``
(or until the supervisor's restart intensity stopped the whole cluster, the run's trace lost).
Now the run routes the step's ``failure`` through its table as any other failure. The short
version, in ``make test``, is the engine's (``tests/actors/engine/test_faults.py``).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import anyio
import pytest

from ontoflow.actors.capability import load_capabilities
from ontoflow.actors.orchestrator.engine import MAX_LOST_ATTEMPTS
from ontoflow.protocols import manifest_from_data
from ontoflow.runtime.embedded import open_local_cluster

pytestmark = [pytest.mark.anyio, pytest.mark.soak]  # 3 worker processes started in turn: ~13 s

POISON = '''
import os
from pathlib import Path
from ontoflow.actors.capability import Capability
from ontoflow.protocols import CapabilityMetadata

class Poison(Capability):
    metadata = CapabilityMetadata(id="test.capability.poison", idempotent=True, timeout_ms=30_000)

    async def execute(self, inputs, context):
        with open({log!r}, "a") as log:
            log.write("attempt\\n")
        os._exit(9)

class Handle(Capability):
    metadata = CapabilityMetadata(id="test.capability.handle", outputs=["test.handled"])

    async def execute(self, inputs, context):
        return {{"test.handled": True}}
'''


async def test_a_poison_step_is_given_up_after_its_last_attempt_and_routed(tmp_path: Path) -> None:
    log = tmp_path / "attempts.log"
    module = tmp_path / "poison.py"
    module.write_text(textwrap.dedent(POISON.format(log=str(log))))
    classes = load_capabilities([str(module)])
    manifest = manifest_from_data({"start": "m", "nodes": {"m": {"entry_block": "p", "blocks": {
        "p": {"worker": "test.capability.poison", "transitions": [{"on_signal": "SIGNAL:FAIL_DEFAULT", "action": "JUMP:h"}]},
        "h": {"worker": "test.capability.handle"},
    }}}})
    async with open_local_cluster(classes, [str(module)], transport="ipc", heartbeat_ms=100) as cluster:
        with anyio.fail_after(60):
            result = await cluster.run(cluster.compile(manifest), {})
    assert result.status == "completed", result.error
    assert result.context["test.handled"] is True
    first = result.trace[0]
    assert (first.block, first.event, first.attempt, first.action) == ("p", "failure", MAX_LOST_ATTEMPTS, "JUMP:h")
    assert first.reason in ("worker_lost", "interrupted")
    assert log.read_text().count("attempt") == MAX_LOST_ATTEMPTS  # each attempt ran once, none after the last
