"""A capability that sets SIGTERM's handler back to the default and is then sent SIGTERM (at
once: here it sends it itself) no longer kills its worker outright: while the worker listens,
``signal.signal`` keeps the worker's handler for a stop signal (``stop_signal_kept``), so the
worker drains (the step answered, then ``Disconnect``) and exits 0. Before, the change lasted
until the worker's next look (500 ms later): the process died of the signal, unanswered. A real
worker process and a real ROUTER."""

from __future__ import annotations

import shutil
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

DEFAULT_THEN_TERM = '''
import os, signal
from ontoflow.actors.capability import Capability
from ontoflow.protocols import CapabilityMetadata

class DefaultThenTerm(Capability):
    metadata = CapabilityMetadata(id="test.capability.sigdfl")

    async def execute(self, inputs, context):
        previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)
        assert callable(previous)  # the worker's, handed back as the previous handler
        os.kill(os.getpid(), signal.SIGTERM)
'''


async def test_sigterm_right_after_a_capability_set_sig_dfl_still_drains() -> None:
    where = Path(tempfile.mkdtemp(prefix="ofs", dir="/tmp"))
    (where / "sigdfl_cap.py").write_text(textwrap.dedent(DEFAULT_THEN_TERM))
    ctx = zmq.asyncio.Context()
    router = ctx.socket(zmq.ROUTER)
    router.linger = 0
    router.bind(f"ipc://{where}/w.sock")
    worker = subprocess.Popen([sys.executable, "-m", "ontoflow", "worker", "--connect", f"ipc://{where}/w.sock",
                               "-c", str(where / "sigdfl_cap.py"), "--worker-id", "w1", "--no-builtins",
                               "--log-level", "error"])
    seen: list[object] = []
    try:
        with anyio.fail_after(30):
            while not any(isinstance(m, Disconnect) for m in seen):
                identity, *frames = await router.recv_multipart()
                for message in from_frames(frames):
                    seen.append(message)
                    if isinstance(message, Ready):
                        await router.send_multipart([identity, *to_frames(Welcome(worker_id="w1", heartbeat_ms=1000, liveness=3, session="t"))])
                        await router.send_multipart([identity, *to_frames(Invoke("r", "s", 1, "test.capability.sigdfl"))])
            code = await anyio.to_thread.run_sync(worker.wait)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        router.close()
        ctx.term()
        shutil.rmtree(where, ignore_errors=True)
    outcomes = [m for m in seen if isinstance(m, Outcome)]
    assert [o.event for o in outcomes] == ["success"]
    assert code == 0
