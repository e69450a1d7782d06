"""A capability whose constructor raises stops its worker with a clear error naming it, its
text scrubbed: `ontoflow worker` and `ontoflow run` (worker processes, or in-process with
`--transport inproc`) printed a traceback that quoted the text whole, a connection URL's
password in it."""

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


class Bad(Capability):
    metadata = CapabilityMetadata(id="t.ctor.bad", events=["success", "failure"])

    def __init__(self):
        super().__init__()
        raise RuntimeError("cannot connect to postgres://admin:{SECRET}@db/x")

    async def execute(self, inputs, context):
        return Result(event="success")
'''

MANIFEST = "name: ctor\nstart: m\nnodes:\n  m:\n    entry_block: b\n    blocks:\n      b:\n        worker: t.ctor.bad\n"


def _ontoflow(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "ontoflow", *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("verb", [
    ("worker", "--connect", "tcp://127.0.0.1:1", "-c", "caps.py", "--no-builtins"),
    ("run", "wf.yaml", "-c", "caps.py", "--no-builtins", "--transport", "inproc"),
    ("run", "wf.yaml", "-c", "caps.py", "--no-builtins"),
], ids=["worker", "run-inproc", "run-processes"])
def test_a_constructor_that_raises_is_named_and_its_text_scrubbed(tmp_path: Path, verb: tuple[str, ...]) -> None:
    (tmp_path / "caps.py").write_text(CAPS)
    (tmp_path / "wf.yaml").write_text(MANIFEST)
    done = _ontoflow(tmp_path, *verb)
    # A worker of its own says it cannot start for good (78: not restarted); run exits 1 (the run failed).
    assert done.returncode == (78 if verb[0] == "worker" else 1), done.stderr
    assert "capability 't.ctor.bad' could not be made: RuntimeError: cannot connect to postgres://" in done.stderr
    assert SECRET not in done.stderr + done.stdout
    assert "Traceback" not in done.stderr
