"""A forked child of ``execute`` that calls ``sys.exit(n)`` exits with ``n`` (fix20w, session 20).

Session 19 made a process forked in ``execute`` that comes back out of it exit at once with
status 70 (it went on as a copy of the worker host). A child ending with ``sys.exit(n)`` (any
``SystemExit``) raises out of ``execute`` too, and exited 70 as well: a capability whose child
reports its result by its exit status (``sys.exit(0)``: done) saw a failure. Now a child
that asked to exit exits with what it asked; only one that returns (or raises anything else)
out of ``execute`` exits 70. The parent waits for its child and answers with the status seen.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

CAPS = '''
import os
import sys

from ontoflow import Capability, CapabilityMetadata


class Forks(Capability):
    metadata = CapabilityMetadata(id="t.forks", outputs=["t.status"], timeout_ms=MS)

    async def execute(self, inputs, context):
        pid = os.fork()
        if pid == 0:  # the child
            HOW
        _, status = os.waitpid(pid, 0)  # blocks the loop a moment: the child ends at once
        return {"t.status": os.waitstatus_to_exitcode(status)}
'''


@pytest.mark.parametrize("timeout_ms", ["None", "5000"], ids=["no timeout", "with a timeout"])
@pytest.mark.parametrize(("how", "status"), [("sys.exit(0)", 0), ("sys.exit(3)", 3), ("sys.exit()", 0),
                                             ("raise SystemExit('bye')", 1), ('return {"t.status": -1}', 70)],
                         ids=["exit 0", "exit 3", "exit None", "exit text", "returns"])
def test_a_forked_child_exits_with_the_status_it_asked_for(tmp_path: Path, how: str, status: int, timeout_ms: str) -> None:
    (tmp_path / "caps.py").write_text(CAPS.replace("HOW", how).replace("MS", timeout_ms))
    (tmp_path / "wf.yaml").write_text("name: f\nstart: m\nnodes:\n  m:\n    entry_block: b\n    blocks:\n"
                                      "      b:\n        worker: t.forks\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env.update(PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    ran = subprocess.run([sys.executable, "-m", "ontoflow", "run", "wf.yaml", "-c", "caps.py", "--json"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert ran.returncode == 0, ran.stderr[-2000:]
    answer = json.loads(ran.stdout)
    assert answer["status"] == "completed" and answer["context"] == {"t.status": status}, answer
    came_back = "a process forked by capability 't.forks' came back out of its execute()" in ran.stderr
    assert came_back == (status == 70), ran.stderr[-2000:]
    if how.startswith("raise SystemExit"):
        assert "bye" in ran.stderr  # as Python prints an exit's text
