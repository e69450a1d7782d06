"""A capability that prints (a debugging ``print`` in ``initialize`` or ``execute``): its lines
go to stderr with either transport, and ``ontoflow run --json`` prints one JSON object on
stdout. Before, in-process (``--transport inproc``) the lines came first on stdout, so the
answer no longer parsed as JSON; in a worker process they were lost on ``/dev/null``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

CAPS = '''
from ontoflow import Capability, CapabilityMetadata


class Prints(Capability):
    metadata = CapabilityMetadata(id="t.prints", events=["success", "failure"])

    async def initialize(self):
        print("hello from initialize", flush=True)

    async def execute(self, inputs, context):
        print("hello from execute", flush=True)
        return None
'''


@pytest.mark.parametrize("transport", ["inproc", "ipc"])
def test_a_capabilitys_prints_go_to_stderr_and_the_json_answer_stays_whole(tmp_path: Path, transport: str) -> None:
    (tmp_path / "caps.py").write_text(CAPS)
    (tmp_path / "wf.yaml").write_text("name: p\nstart: m\nnodes:\n  m:\n    entry_block: b\n    blocks:\n"
                                      "      b:\n        worker: t.prints\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-m", "ontoflow", "run", "wf.yaml", "-c", "caps.py", "--no-builtins",
                           "--transport", transport, "--json"], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "completed"
    assert "hello from initialize" in done.stderr and "hello from execute" in done.stderr
