"""A thread a capability started and left running (not a daemon thread: a client's pool, a
watcher looping for ever) no longer holds its worker process up after SIGTERM: once drained
and shut down, the worker exits (exit code 0, ``worker_threads_left`` logged) instead of
waiting for the thread at interpreter exit, for ever. A real worker process and a real ROUTER."""

from __future__ import annotations

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

from ontoflow.protocols.messages import Invoke, Outcome, Ready, Welcome
from ontoflow.runtime.codec import from_frames, to_frames

pytestmark = pytest.mark.anyio

LEAVES_A_THREAD = '''
import threading
from ontoflow.actors.capability import Capability
from ontoflow.protocols import CapabilityMetadata

class LeavesAThread(Capability):
    metadata = CapabilityMetadata(id="test.capability.thread")

    async def execute(self, inputs, context):
        threading.Thread(target=threading.Event().wait, name="forever").start()  # not a daemon
'''


BUSY_EXECUTOR = '''
import asyncio
import time
from ontoflow.actors.capability import Capability
from ontoflow.protocols import CapabilityMetadata

class BusyExecutor(Capability):
    metadata = CapabilityMetadata(id="test.capability.thread")

    async def execute(self, inputs, context):
        asyncio.get_running_loop().run_in_executor(None, time.sleep, 600)  # fire and forget, busy for ten minutes
'''


async def test_a_busy_thread_of_the_loops_executor_does_not_hold_the_worker_after_sigterm() -> None:
    """Shutting the loop's executor down before counting threads (to spare idle ones a warning)
    joined a busy one on the event loop's thread, whatever the bound around it (review22b):
    the worker waited ten minutes here."""
    code, _ = await _run_then_sigterm(BUSY_EXECUTOR)
    assert code == 0


async def test_a_non_daemon_thread_left_running_does_not_hold_the_worker_after_sigterm() -> None:
    code, _ = await _run_then_sigterm(LEAVES_A_THREAD)
    assert code == 0


async def _run_then_sigterm(module: str) -> tuple[int, str]:
    where = Path(tempfile.mkdtemp(prefix="oft", dir="/tmp"))
    (where / "thread_cap.py").write_text(textwrap.dedent(module))
    ctx = zmq.asyncio.Context()
    router = ctx.socket(zmq.ROUTER)
    router.linger = 0
    router.bind(f"ipc://{where}/w.sock")
    worker = subprocess.Popen([sys.executable, "-m", "ontoflow", "worker", "--connect", f"ipc://{where}/w.sock",
                               "-c", str(where / "thread_cap.py"), "--worker-id", "w1", "--no-builtins",
                               "--log-level", "warning", "--log-file", str(where / "w.log")])
    try:
        with anyio.fail_after(60):
            answered = False
            while not answered:
                identity, *frames = await router.recv_multipart()
                for message in from_frames(frames):
                    if isinstance(message, Ready):
                        await router.send_multipart([identity, *to_frames(Welcome(worker_id="w1", heartbeat_ms=1000, liveness=3, session="t"))])
                        await router.send_multipart([identity, *to_frames(Invoke("r", "s", 1, "test.capability.thread"))])
                    answered = answered or isinstance(message, Outcome)
            worker.send_signal(signal.SIGTERM)
            code = await anyio.to_thread.run_sync(lambda: worker.wait(timeout=60))  # before: never (TimeoutExpired)
        return code, (where / "w.log").read_text()
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        router.close()
        ctx.term()
        shutil.rmtree(where, ignore_errors=True)
