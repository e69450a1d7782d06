"""A worker process told to stop (SIGTERM) while a step swallows every cancellation ends all the
same: after its drain, the steps still running get the cancel grace (``--cancel-grace-s``) to
stop, then the process exits 1 saying why. Before, it drained, said goodbye and then waited for
that step for ever: the process never exited (a second SIGTERM killed it without any
capability's ``shutdown()``), and nothing said what it waited for."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from ontoflow.protocols.messages import Invoke, Outcome, Ready, Welcome
from ontoflow.runtime.transport import open_router

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]

CAPS = '''
import asyncio
from pathlib import Path

from ontoflow import Capability, CapabilityMetadata


class Stubborn(Capability):
    metadata = CapabilityMetadata(id="t.stubborn", timeout_ms=None)

    async def execute(self, inputs, context):
        Path("started").write_text("yes")
        while True:
            try:
                await asyncio.sleep(0.05)
            except asyncio.CancelledError:
                pass  # told to stop: goes on regardless
'''


async def test_a_step_swallowing_its_cancellation_does_not_hold_a_stopping_worker_for_ever(tmp_path: Path) -> None:
    (tmp_path / "caps.py").write_text(CAPS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")
    async with open_router("tcp://127.0.0.1:0") as router:
        worker = await anyio.open_process(
            [sys.executable, "-m", "ontoflow", "worker", "--connect", router.address, "-c", "caps.py", "--no-builtins",
             "--worker-id", "w1", "--grace-s", "0.2", "--cancel-grace-s", "0.5"],
            cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        try:
            with anyio.fail_after(60):
                while not (tmp_path / "started").exists():
                    for peer, message in await router.recv_batch():
                        if isinstance(message, Ready):
                            router.send(peer, Welcome(worker_id="w1", heartbeat_ms=1000, liveness=30, session="t"))
                            router.send(peer, Invoke(run_id="r", step_id="s", attempt=1, capability="t.stubborn"))
                        assert not isinstance(message, Outcome)
            worker.send_signal(signal.SIGTERM)
            with anyio.fail_after(60):
                code = await worker.wait()
            assert worker.stderr is not None
            said = ""
            try:
                while True:
                    said += (await worker.stderr.receive()).decode(errors="replace")
            except anyio.EndOfStream:
                pass
        finally:
            if worker.returncode is None:
                worker.kill()
            await worker.aclose()
    assert code == 1
    assert "1 step still running" in said and "--cancel-grace-s" in said
