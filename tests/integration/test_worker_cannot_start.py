"""``ontoflow worker`` with a capability that cannot start for good (its constructor raises, or
its ``initialize()`` raises an error that is not transient) exits 78 (BSD sysexits' EX_CONFIG),
which a supervisor is told not to restart on (systemd's ``RestartPreventExitStatus=78``); a
transient ``initialize()`` error still exits 1, to be restarted. Before, both exited 1, and
systemd's ``Restart=on-failure`` restarted a worker that could never start, forever. Real
worker processes, no daemon needed (capabilities start before the worker connects)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SECRET = "hunter2-secret"

CAPS = f'''
from ontoflow import Capability, CapabilityMetadata, Result

URL = "postgres://admin:{SECRET}@db/x"


class Ctor(Capability):
    metadata = CapabilityMetadata(id="t.start.ctor", events=["success", "failure"])

    def __init__(self):
        super().__init__()
        raise RuntimeError("cannot connect to " + URL)

    async def execute(self, inputs, context):
        return Result(event="success")


class Init(Capability):
    metadata = CapabilityMetadata(id="t.start.init", events=["success", "failure"])

    async def initialize(self):
        raise ValueError("bad settings for " + URL)

    async def execute(self, inputs, context):
        return Result(event="success")


class Transient(Capability):
    metadata = CapabilityMetadata(id="t.start.transient", events=["success", "failure"])

    async def initialize(self):
        raise ConnectionRefusedError("database at " + URL + " not up yet")

    async def execute(self, inputs, context):
        return Result(event="success")
'''


def _worker(cwd: Path, capability: str) -> subprocess.CompletedProcess[str]:
    """``ontoflow worker`` hosting ``capability`` alone (its class from ``CAPS``)."""
    (cwd / "caps.py").write_text(CAPS)
    name = {"t.start.ctor": "Ctor", "t.start.init": "Init", "t.start.transient": "Transient"}[capability]
    (cwd / "only.py").write_text(f"from caps import {name}\n\nCAPABILITIES = [{name}]\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(cwd), os.environ.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "ontoflow", "worker", "--connect", "tcp://127.0.0.1:1",
                           "-c", "only.py", "--no-builtins"], cwd=cwd, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("capability", "said"), [
    ("t.start.ctor", "capability 't.start.ctor' could not be made: RuntimeError: cannot connect to postgres://"),
    ("t.start.init", "capability 't.start.init' could not initialise: ValueError: bad settings for postgres://"),
], ids=["constructor", "initialize"])
def test_a_worker_that_cannot_start_for_good_exits_78(tmp_path: Path, capability: str, said: str) -> None:
    done = _worker(tmp_path, capability)
    assert done.returncode == 78, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("ontoflow:")]
    assert len(errors) == 1 and errors[0].startswith(f"ontoflow: {said}"), done.stderr[-2000:]
    assert SECRET not in done.stderr + done.stdout and "Traceback" not in done.stderr


def test_a_transient_initialize_error_still_exits_1_to_be_restarted(tmp_path: Path) -> None:
    done = _worker(tmp_path, "t.start.transient")
    assert done.returncode == 1, done.stderr[-2000:]
    assert "could not initialise: ConnectionRefusedError" in done.stderr
    assert SECRET not in done.stderr + done.stdout and "Traceback" not in done.stderr
