"""A ``shutdown()`` that blocks the event loop: one that comes back past its bound counts as
timed out; one that blocks for good is told by a watchdog thread, and a worker process of its
own ends with exit code 1 saying which (before: a SIGTERM'd worker never exited)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from ontoflow import Capability, CapabilityMetadata
from ontoflow.actors.capability import _watchdog, shut_down

pytestmark = pytest.mark.anyio


async def test_a_shutdown_blocking_past_its_bound_is_told_and_counted_as_timed_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    told = threading.Event()
    said: list[tuple[str, dict[str, Any]]] = []

    class Log:
        def error(self, event: str, **fields: Any) -> None:
            said.append((event, fields))
            told.set()

    monkeypatch.setattr(_watchdog, "log", Log())

    class BlocksUntilTold(Capability):
        metadata = CapabilityMetadata(id="t.blocks_shutdown")

        async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
            return None

        async def shutdown(self) -> None:
            told.wait(30)  # blocks the loop: only the watchdog thread can still speak

    with capture_logs() as logs:
        # Before: True ("returned in time"), and nothing said it blocked the loop.
        assert await shut_down(BlocksUntilTold(), timeout_s=0.05) is False
    assert said == [("capability_shutdown_blocked", {"capability": "t.blocks_shutdown", "timeout_s": 0.05})]
    assert [e["event"] for e in logs] == ["capability_shutdown_timed_out"]


_CAPS = '''
import os, time
from ontoflow import Capability, CapabilityMetadata

class StuckAtShutdown(Capability):
    metadata = CapabilityMetadata(id="demo.stuck_at_shutdown", perceive_interval_ms=1)

    async def execute(self, inputs, context):
        return None

    async def perceive(self):  # polled once the worker listens for SIGTERM
        open(os.environ["READY_FILE"], "w").close()
        return []

    async def shutdown(self):
        time.sleep(3600)  # a blocking client's close, with no timeout
'''


async def test_a_worker_whose_shutdown_blocks_for_good_exits_1_saying_which(tmp_path: Path) -> None:
    (tmp_path / "caps.py").write_text(_CAPS)
    ready = tmp_path / "ready"
    worker = subprocess.Popen(
        [sys.executable, "-m", "ontoflow", "worker", "--connect", f"ipc://{tmp_path}/none.sock", "-c", "caps.py",
         "--no-builtins", "--grace-s", "0"],
        cwd=tmp_path, env=dict(os.environ, READY_FILE=str(ready)), stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        with anyio.fail_after(60):
            while not ready.exists():
                await anyio.sleep(0.01)  # another process writes the file: no event to wait on
        worker.send_signal(signal.SIGTERM)
        _, stderr = await anyio.to_thread.run_sync(lambda: worker.communicate(timeout=60))
    finally:
        worker.kill()
        worker.communicate()
    assert worker.returncode == 1, stderr[-2000:]
    assert ("ontoflow: capability 'demo.stuck_at_shutdown' did not shut down within 5 s: it blocks the event loop"
            in stderr), stderr[-2000:]
