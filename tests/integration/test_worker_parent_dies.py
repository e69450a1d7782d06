"""A worker process whose supervising parent dies (``ontoflow run`` killed with SIGKILL, by the
OOM killer) stops on its own, as on SIGTERM. Before, it was reparented to init and went on for
ever: the orchestrator was gone with the parent, so it registered again and again at an address
no one would ever listen on, a step it ran holding its slot, one process per worker left over
at every crash of a ``run``."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from ontoflow.runtime.actor._process import SUPERVISOR_ENV

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]

CAPS = '''
from ontoflow import Capability, CapabilityMetadata


class Idle(Capability):
    metadata = CapabilityMetadata(id="t.idle")

    async def execute(self, inputs, context):
        return None
'''

# The supervising parent: starts the worker as ``runtime.actor.process_child`` does (the
# variable naming this process), tells its pid, waits for it.
PARENT = '''
import os, subprocess, sys
env = dict(os.environ, {env}=str(os.getpid()))
child = subprocess.Popen(sys.argv[1:], env=env, stdin=subprocess.DEVNULL)
print(child.pid, flush=True)
child.wait()
'''


def _free_address() -> str:
    with socket.socket() as sock:  # nothing listens there: the worker keeps registering
        sock.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{sock.getsockname()[1]}"


async def test_a_worker_whose_supervising_parent_was_killed_stops_on_its_own(tmp_path: Path) -> None:
    (tmp_path / "caps.py").write_text(CAPS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")
    worker = [sys.executable, "-m", "ontoflow", "worker", "--connect", _free_address(), "-c", "caps.py",
              "--no-builtins", "--log-level", "info", "--reconnect-max", "1"]
    parent = await anyio.open_process([sys.executable, "-c", PARENT.format(env=SUPERVISOR_ENV), *worker],
                                      cwd=tmp_path, env=env, stdin=subprocess.DEVNULL)
    assert parent.stdout is not None and parent.stderr is not None
    worker_pid = 0
    logged = b""
    try:
        with anyio.fail_after(60):
            worker_pid = int((await parent.stdout.receive()).split()[0])
            while b"worker_started" not in logged:  # the worker's log, on the stderr it inherited
                logged += await parent.stderr.receive()
        parent.kill()  # SIGKILL: the parent cleans nothing up
        await parent.wait()
        # The worker holds the last write end of the pipe: its end comes when the worker exits.
        with anyio.fail_after(60):
            try:
                while True:
                    logged += await parent.stderr.receive()
            except anyio.EndOfStream:
                pass
    finally:
        if worker_pid:
            try:
                os.kill(worker_pid, signal.SIGKILL)  # before the fix: it would outlive the test
            except ProcessLookupError:
                pass
        await parent.aclose()
    assert b"worker_orphaned" in logged and b"worker_drained" in logged, logged
