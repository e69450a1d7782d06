"""A process a step started and never waited for (``subprocess.Popen`` without ``wait``) ends
with its worker process: after the drain and the capabilities' ``shutdown()``, the worker
SIGTERMs and reaps its children (``_children.end_children``). Before, it outlived the worker
for ever, reparented. A real worker process and a real ROUTER."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import anyio
import pytest
import zmq
import zmq.asyncio

from ontoflow.protocols.messages import Disconnect, Invoke, Outcome, Ready, Welcome
from ontoflow.runtime.codec import from_frames, to_frames

pytestmark = pytest.mark.anyio

SPAWNS = '''
import subprocess, sys
from ontoflow.actors.capability import Capability
from ontoflow.protocols import CapabilityMetadata

class Spawns(Capability):
    metadata = CapabilityMetadata(id="test.capability.spawns", outputs=["test.pid"])

    async def execute(self, inputs, context):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        return {"test.pid": child.pid}
'''


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead: it only waits for a parent to reap it.
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"


async def test_a_process_a_step_left_running_ends_with_the_worker() -> None:
    where = Path(tempfile.mkdtemp(prefix="ofc", dir="/tmp"))
    (where / "spawns_cap.py").write_text(textwrap.dedent(SPAWNS))
    ctx = zmq.asyncio.Context()
    router = ctx.socket(zmq.ROUTER)
    router.linger = 0
    router.bind(f"ipc://{where}/w.sock")
    worker = subprocess.Popen([sys.executable, "-m", "ontoflow", "worker", "--connect", f"ipc://{where}/w.sock",
                               "-c", str(where / "spawns_cap.py"), "--worker-id", "w1", "--no-builtins",
                               "--log-level", "error"])
    pid = None
    try:
        with anyio.fail_after(30):
            while pid is None:
                identity, *frames = await router.recv_multipart()
                for message in from_frames(frames):
                    if isinstance(message, Ready):
                        await router.send_multipart([identity, *to_frames(Welcome(worker_id="w1", heartbeat_ms=1000, liveness=3, session="t"))])
                        await router.send_multipart([identity, *to_frames(Invoke("r", "s", 1, "test.capability.spawns"))])
                    elif isinstance(message, Outcome):
                        pid = message.outputs["test.pid"]
            assert _alive(pid)
            worker.send_signal(signal.SIGTERM)
            code = await anyio.to_thread.run_sync(worker.wait)
        assert code == 0
        assert not _alive(pid)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        if pid is not None and _alive(pid):
            os.kill(pid, signal.SIGKILL)
        router.close()
        ctx.term()
        shutil.rmtree(where, ignore_errors=True)


DROPS = '''
import subprocess, sys
from ontoflow.actors.capability import Capability
from ontoflow.protocols import CapabilityMetadata

class Drops(Capability):
    metadata = CapabilityMetadata(id="test.capability.drops", outputs=["test.pid"])

    async def execute(self, inputs, context):
        # Dropped unwaited while it runs: Python keeps it to reap at the next Popen, never made.
        return {"test.pid": subprocess.Popen([sys.executable, "-c", "import time; time.sleep(2)"]).pid}
'''


async def test_a_child_a_step_dropped_unwaited_is_reaped_once_it_exits(tmp_path: Path) -> None:
    # Before: a zombie for the worker's whole life, one per step (the process table filled).
    (tmp_path / "drops_cap.py").write_text(textwrap.dedent(DROPS))
    where = Path(tempfile.mkdtemp(prefix="ofz", dir="/tmp"))
    ctx = zmq.asyncio.Context()
    router = ctx.socket(zmq.ROUTER)
    router.linger = 0
    router.bind(f"ipc://{where}/w.sock")
    worker = await anyio.open_process([sys.executable, "-m", "ontoflow", "worker", "--connect", f"ipc://{where}/w.sock",
                                       "-c", str(tmp_path / "drops_cap.py"), "--worker-id", "w1", "--no-builtins",
                                       "--log-level", "info"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    assert worker.stderr is not None
    pid = None
    logged = ""
    try:
        with anyio.fail_after(30):
            while pid is None:
                identity, *frames = await router.recv_multipart()
                for message in from_frames(frames):
                    if isinstance(message, Ready):
                        await router.send_multipart([identity, *to_frames(Welcome(worker_id="w1", heartbeat_ms=1000, liveness=30, session="t"))])
                        await router.send_multipart([identity, *to_frames(Invoke("r", "s", 1, "test.capability.drops"))])
                    elif isinstance(message, Outcome):
                        pid = message.outputs["test.pid"]
            while "step_children_reaped" not in logged:
                logged += (await worker.stderr.receive()).decode(errors="replace")
        assert not Path(f"/proc/{pid}").exists()  # reaped: not even a zombie
    finally:
        worker.send_signal(signal.SIGTERM)
        with anyio.fail_after(30):
            await worker.wait()
        await worker.aclose()
        router.close()
        ctx.term()
        shutil.rmtree(where, ignore_errors=True)
