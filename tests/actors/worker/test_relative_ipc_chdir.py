"""A step that moves its worker's working directory (``os.chdir``) no longer moves the worker's
relative ``ipc://`` address: libzmq resolves the path at each reconnect, so after the step the
worker reconnected to another file and never reached its daemon again. A real worker process
(``ontoflow worker --connect ipc://w.sock``) and a real ROUTER, rebound to force a reconnect."""

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

from ontoflow.protocols.messages import Invoke, Outcome, Ready, Welcome
from ontoflow.runtime.codec import from_frames, to_frames

pytestmark = pytest.mark.anyio

CHDIR = '''
import os
from ontoflow.actors.capability import Capability
from ontoflow.protocols import CapabilityMetadata

class Chdir(Capability):
    metadata = CapabilityMetadata(id="test.capability.chdir")

    async def execute(self, inputs, context):
        os.chdir("/")
'''


def _router(ctx: zmq.asyncio.Context, path: Path) -> zmq.asyncio.Socket:
    sock = ctx.socket(zmq.ROUTER)
    sock.linger = 0
    sock.bind(f"ipc://{path}")
    return sock


async def _next(router: zmq.asyncio.Socket) -> tuple[bytes, list[object]]:
    identity, *frames = await router.recv_multipart()
    return identity, from_frames(frames)


async def test_a_step_changing_directory_does_not_move_a_relative_ipc_address() -> None:
    where = Path(tempfile.mkdtemp(prefix="ofw", dir="/tmp"))  # short: a Unix socket path is
    (where / "chdir_cap.py").write_text(textwrap.dedent(CHDIR))
    ctx = zmq.asyncio.Context()
    router = _router(ctx, where / "w.sock")
    worker = subprocess.Popen([sys.executable, "-m", "ontoflow", "worker", "--connect", "ipc://w.sock", "-c", "chdir_cap.py",
                               "--worker-id", "w1", "--no-builtins", "--log-level", "error"], cwd=where)
    try:
        with anyio.fail_after(30):
            answered = False
            while not answered:
                identity, messages = await _next(router)
                for message in messages:
                    if isinstance(message, Ready):
                        await router.send_multipart([identity, *to_frames(Welcome(worker_id="w1", heartbeat_ms=100, liveness=3, session="t"))])
                        await router.send_multipart([identity, *to_frames(Invoke("r", "s", 1, "test.capability.chdir"))])
                    elif isinstance(message, Outcome):
                        assert message.event == "success", message
                        answered = True
            router.close()  # the worker reconnects: to the same file, wherever its step went
            os.unlink(where / "w.sock")
            router = _router(ctx, where / "w.sock")
            identity, _ = await _next(router)  # before: never (it connected to /w.sock)
            assert identity == b"w1"
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
        router.close()
        ctx.term()
        shutil.rmtree(where, ignore_errors=True)
