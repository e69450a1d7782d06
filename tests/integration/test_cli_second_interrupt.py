"""``ontoflow run --transport inproc`` whose step blocks the event loop (a blocking client in
``execute``): the first Ctrl-C cannot cancel the run (its cancellation waits for the loop), the
second is raised where the code stands and gets the person out, exit 130 (143 for SIGTERM).
Before, the capability base caught that KeyboardInterrupt as the step's own failure, and the
stop handler never raised it at all: no number of Ctrl-C ended the command. A real process; the
step tells the test over TCP when it started and when the first signal was seen."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import anyio
import pytest

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
AS_ON_A_TERMINAL = [sys.executable, "-c", "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
                    "sys.argv[0] = 'ontoflow'; runpy.run_module('ontoflow', run_name='__main__')"]

CAPS = '''
import os, socket, time
from ontoflow import Capability, CapabilityMetadata, Result
from ontoflow.runtime.cli._signals import STOP


class Blocks(Capability):
    metadata = CapabilityMetadata(id="t.blocks", events=["success", "failure"])

    async def execute(self, inputs, context):
        with socket.create_connection(("127.0.0.1", int(os.environ["T_PORT"]))) as told:
            told.sendall(b"started\\n")
            while STOP.signum is None:  # a blocking client: the loop never runs meanwhile
                time.sleep(0.01)
            told.sendall(b"first\\n")
            time.sleep(3600)
        return Result(event="success")
'''
WORKFLOW = "name: b\nstart: m\nnodes:\n  m:\n    entry_block: b\n    blocks:\n      b:\n        worker: t.blocks\n"


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
async def test_a_second_signal_gets_out_of_a_step_that_blocks_the_loop(tmp_path: Path, signum: signal.Signals,
                                                                       code: int) -> None:
    (tmp_path / "caps.py").write_text(CAPS)
    (tmp_path / "wf.yaml").write_text(WORKFLOW)
    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listeners:
        listener = listeners.listeners[0]
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
        env.update(T_PORT=str(port), PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        argv = [*AS_ON_A_TERMINAL, "run", "wf.yaml", "-c", "caps.py", "--no-builtins", "--transport", "inproc"]
        process = await anyio.open_process(argv, cwd=tmp_path, env=env)
        try:
            with anyio.fail_after(60):
                stream = await listener.accept()
                async with stream:
                    said = b""
                    while b"started\n" not in said:
                        said += await stream.receive()
                    process.send_signal(signum)
                    while b"first\n" not in said:
                        said += await stream.receive()
                    process.send_signal(signum)
                    assert await process.wait() == code
            assert process.stderr is not None
            err = b""
            with anyio.fail_after(30):
                async for chunk in process.stderr:
                    err += chunk
            assert b"Traceback" not in err, err
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
            await process.aclose()
