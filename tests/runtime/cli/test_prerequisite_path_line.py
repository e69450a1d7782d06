"""``ontoflow run``'s path names a prerequisite step by the capability that ran, and gives it no
route: it printed ``main.b (prerequisite)  failure -> end`` for the block's prerequisite, which
read as the block's own step ending the run, though the run went on (red23a noticed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CAPS = '''
from ontoflow import Capability, CapabilityMetadata, Result

class First(Capability):
    metadata = CapabilityMetadata(id="t.first", events=["success"], outputs=["t.one"])

    async def execute(self, inputs, context):
        return Result(event="success", outputs={"t.one": 1})


class Second(Capability):
    metadata = CapabilityMetadata(id="t.second", events=["success"], requires=["t.first"], outputs=["t.two"])

    async def execute(self, inputs, context):
        return Result(event="success", outputs={"t.two": 2})
'''
WORKFLOW = "name: pre\nnodes:\n  main:\n    entry_block: b\n    blocks:\n      b: {worker: t.second, transitions: []}\n"


def test_a_prerequisite_step_is_named_by_its_capability_and_routes_nowhere(tmp_path: Path) -> None:
    (tmp_path / "caps.py").write_text(CAPS)
    (tmp_path / "w.yaml").write_text(WORKFLOW)
    done = subprocess.run([sys.executable, "-m", "ontoflow", "run", "w.yaml", "-c", "caps.py", "--transport", "inproc"],
                          cwd=tmp_path, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [line.split() for line in done.stdout.splitlines() if line.startswith("    s")]
    assert lines[0][:6] == ["s1", "main.b", "(prerequisite", "t.first)", "success", "->"] and lines[0][6] == "-", lines
    assert lines[1][:5] == ["s2", "main.b", "success", "->", "end"], lines
