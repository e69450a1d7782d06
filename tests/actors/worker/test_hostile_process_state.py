"""A step that changes its worker process's state for the steps after it: closes fd 2, moves
the working directory. Real worker processes over ipc."""

from __future__ import annotations

import textwrap
from pathlib import Path

import anyio
import pytest

from ontoflow.actors.capability import load_capabilities
from ontoflow.protocols import manifest_from_data
from ontoflow.runtime.embedded import open_local_cluster

pytestmark = pytest.mark.anyio

HOSTILE = '''
import os
from ontoflow.actors.capability import Capability
from ontoflow.protocols import CapabilityMetadata

class CloseStderr(Capability):
    metadata = CapabilityMetadata(id="test.capability.close_stderr", outputs=["test.closed"])

    async def execute(self, inputs, context):
        os.close(2)
        return {"test.closed": True}

class Fails(Capability):
    metadata = CapabilityMetadata(id="test.capability.fails")

    async def execute(self, inputs, context):
        raise ValueError("a plain failure")
'''


def _chain(first: str, then: str):
    return manifest_from_data({"start": "m", "nodes": {"m": {"entry_block": "a", "blocks": {
        "a": {"worker": first, "transitions": [{"on_signal": "success", "action": "JUMP:b"}]},
        "b": {"worker": then, "transitions": [{"on_signal": "SIGNAL:FAIL_DEFAULT", "action": "JUMP:c"}]},
        "c": {"worker": first},
    }}}})


async def test_a_step_closing_fd_2_leaves_later_failures_plain_failures(tmp_path: Path) -> None:
    module = tmp_path / "hostile.py"
    module.write_text(textwrap.dedent(HOSTILE))
    classes = load_capabilities([str(module)])
    manifest = _chain("test.capability.close_stderr", "test.capability.fails")
    async with open_local_cluster(classes, [str(module)], transport="ipc") as cluster:
        with anyio.fail_after(60):
            result = await cluster.run(cluster.compile(manifest), {})
    failed = [step for step in result.trace if step.block == "b"][0]
    assert (failed.event, failed.reason) == ("failure", "error"), failed
    assert "a plain failure" in (failed.error or "")


RESTORE = '''
import os, structlog
from ontoflow.runtime.logging import configure_logging
from ontoflow.actors.worker._stop import restore_stdio
configure_logging(level="info")
log = structlog.get_logger()
copies = {1: os.dup(1), 2: os.dup(2)}
os.close(1)
os.close(2)  # what a step did
log.warning("while_closed")  # dropped, never raised into the caller
assert restore_stdio(copies) == [1, 2] and restore_stdio(copies) == []
log.warning("after_restore")
print("stdout_back", flush=True)
'''


def test_a_closed_stdout_and_stderr_are_put_back_and_logging_never_raises_meanwhile() -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", RESTORE], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "after_restore" in done.stderr and "while_closed" not in done.stderr
    assert done.stdout == "stdout_back\n"
