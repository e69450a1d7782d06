"""A step's error printed in ``ontoflow run``'s path keeps every line under its step: a newline
in a capability's error text printed the rest at the left margin, where it read as a line of
the path or of the answer (``    s9  main.x  success -> end``, ``run ... completed``; red23b
noticed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CAPS = '''
from ontoflow import Capability, CapabilityMetadata, PermanentError


class Forger(Capability):
    metadata = CapabilityMetadata(id="t.forger", events=["success", "failure"])

    async def execute(self, inputs, context):
        raise PermanentError("bad\\n    s9  main.z                           success      -> end\\nrun x completed")
'''
WORKFLOW = "name: forge\nnodes:\n  main:\n    entry_block: a\n    blocks:\n      a: {worker: t.forger, transitions: []}\n"


def test_no_line_of_a_steps_error_reaches_the_left_margin(tmp_path: Path) -> None:
    (tmp_path / "caps.py").write_text(CAPS)
    (tmp_path / "w.yaml").write_text(WORKFLOW)
    done = subprocess.run([sys.executable, "-m", "ontoflow", "run", "w.yaml", "-c", "caps.py", "--transport", "inproc"],
                          cwd=tmp_path, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert not [line for line in lines if line.startswith(("    s9", "run x"))], done.stdout
    assert any(line.startswith("        ") and "s9  main.z" in line for line in lines), done.stdout
