"""``ontoflow run`` with a capability that cannot start for good (its constructor raises, or
its ``initialize()`` raises an error that is not transient) stops at once: exit 1, the error
named and scrubbed, printed once. Before, the worker process was started four times, each
printing the error, and the supervisor's own "crashed 4 times in a row" came last. A transient
``initialize()`` error is still restarted (the run then completes). Real worker processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SECRET = "hunter2-secret"

HEAD = f'''
from pathlib import Path
from ontoflow import Capability, CapabilityMetadata, Result

URL = "postgres://admin:{SECRET}@db/x"
'''

CAPS = {"t.start.ctor": '''

class Ctor(Capability):
    metadata = CapabilityMetadata(id="t.start.ctor", events=["success", "failure"])

    def __init__(self):
        super().__init__()
        raise RuntimeError("cannot connect to " + URL)

    async def execute(self, inputs, context):
        return Result(event="success")
''', "t.start.init": '''
class Init(Capability):
    metadata = CapabilityMetadata(id="t.start.init", events=["success", "failure"])

    async def initialize(self):
        raise ValueError("bad settings for " + URL)

    async def execute(self, inputs, context):
        return Result(event="success")
''', "t.start.flaky": '''
class Flaky(Capability):
    """Refused once (the database still starting), then fine: a worker process restarted."""

    metadata = CapabilityMetadata(id="t.start.flaky", events=["success", "failure"])

    async def initialize(self):
        marker = Path("tried")
        if not marker.exists():
            marker.write_text("x")
            raise ConnectionRefusedError("database at " + URL + " not up yet")

    async def execute(self, inputs, context):
        return Result(event="success")
'''}


def _manifest(capability: str) -> str:
    return f"name: s\nstart: m\nnodes:\n  m:\n    entry_block: b\n    blocks:\n      b:\n        worker: {capability}\n"


def _run(cwd: Path, capability: str) -> subprocess.CompletedProcess[str]:
    (cwd / "caps.py").write_text(HEAD + CAPS[capability])
    (cwd / "wf.yaml").write_text(_manifest(capability))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "ontoflow", "run", "wf.yaml", "-c", "caps.py", "--no-builtins"],
                          cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("capability", "said"), [
    ("t.start.ctor", "ontoflow: capability 't.start.ctor' could not be made: RuntimeError: cannot connect to postgres://"),
    ("t.start.init", "ontoflow: capability 't.start.init' could not initialise: ValueError: bad settings for postgres://"),
], ids=["constructor", "initialize"])
def test_a_capability_that_cannot_start_stops_run_at_once_with_one_message(tmp_path: Path, capability: str,
                                                                          said: str) -> None:
    done = _run(tmp_path, capability)
    assert done.returncode == 1, done.stderr
    assert done.stderr.count(said) == 1, done.stderr
    assert [line for line in done.stderr.splitlines() if line.startswith("ontoflow:")] == [line for line in
            done.stderr.splitlines() if line.startswith(said)]
    assert "process_crashed" not in done.stderr and "crashed 4 times" not in done.stderr
    assert SECRET not in done.stderr + done.stdout and "Traceback" not in done.stderr


def test_a_transient_initialize_error_is_still_restarted(tmp_path: Path) -> None:
    done = _run(tmp_path, "t.start.flaky")
    assert done.returncode == 0, done.stderr
    assert "completed" in done.stdout
    assert "process_crashed" in done.stderr  # the first worker process exited; its successor ran the step
    assert SECRET not in done.stderr + done.stdout
