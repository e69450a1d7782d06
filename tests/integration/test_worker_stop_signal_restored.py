"""A capability that changes a stop signal's handler (``signal.signal(SIGTERM, SIG_IGN)``, a
library installing its own) does not take the worker's drain away: the worker puts its own
back (``stop_signal_restored``), or keeps it from being changed (``stop_signal_kept``), and SIGTERM drains it as before. Before, SIGTERM was then
ignored for good (the worker could only be killed) or, with ``SIG_DFL``, killed it outright:
no drain, no answers, no ``shutdown()``, no goodbye."""

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
import signal

from ontoflow import Capability, CapabilityMetadata


_RAW = signal.signal  # taken at import, before the worker guards it: as a C library's sigaction


class Meddles(Capability):
    metadata = CapabilityMetadata(id="t.meddles")

    async def execute(self, inputs, context):
        to = inputs["to"]
        (_RAW if to.startswith("raw:") else signal.signal)(signal.SIGTERM, getattr(signal, to.removeprefix("raw:")))
'''


@pytest.mark.parametrize("to", ["SIG_IGN", "SIG_DFL", "raw:SIG_DFL"])
async def test_a_capability_changing_sigterms_handler_does_not_take_the_drain_away(tmp_path: Path, to: str) -> None:
    (tmp_path / "caps.py").write_text(CAPS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")
    async with open_router("tcp://127.0.0.1:0") as router:
        worker = await anyio.open_process(
            [sys.executable, "-m", "ontoflow", "worker", "--connect", router.address, "-c", "caps.py", "--no-builtins",
             "--worker-id", "w1", "--log-level", "info"],
            cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        assert worker.stderr is not None
        logged = ""
        try:
            with anyio.fail_after(60):
                answered = False
                while not answered:
                    for peer, message in await router.recv_batch():
                        if isinstance(message, Ready):
                            router.send(peer, Welcome(worker_id="w1", heartbeat_ms=1000, liveness=30, session="t"))
                            router.send(peer, Invoke("r", "s", 1, "t.meddles", {"to": to}))
                        answered = answered or isinstance(message, Outcome)
                while "stop_signal_kept" not in logged and "stop_signal_restored" not in logged:  # kept since session 22
                    logged += (await worker.stderr.receive()).decode(errors="replace")
            worker.send_signal(signal.SIGTERM)
            with anyio.fail_after(60):
                try:
                    while True:
                        logged += (await worker.stderr.receive()).decode(errors="replace")
                except anyio.EndOfStream:
                    pass
                code = await worker.wait()
        finally:
            if worker.returncode is None:
                worker.kill()
            await worker.aclose()
    assert code == 0 and "worker_drained" in logged
