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
'''

CAP = '''

class ForksN(Capability):
    metadata = CapabilityMetadata(id="t.forksN", outputs=["t.statusN"], timeout_ms=MS)

    async def execute(self, inputs, context):
        pid = os.fork()
        if pid == 0:  # the child
            HOW
        _, status = os.waitpid(pid, 0)  # blocks the loop a moment: the child ends at once
        return {"t.statusN": os.waitstatus_to_exitcode(status)}
'''

HOWS = [("sys.exit(0)", 0), ("sys.exit(3)", 3), ("sys.exit()", 0), ("raise SystemExit('bye')", 1), ('return {"t.statusN": -1}', 70)]


def _workflow() -> str:
    """One block per way of ending, run one after the other (JUMP on success)."""
    lines = ["name: f", "start: m", "nodes:", "  m:", "    entry_block: b0", "    blocks:"]
    for n in range(len(HOWS)):
        then = f"JUMP:b{n + 1}" if n + 1 < len(HOWS) else "RETURN"
        lines += [f"      b{n}:", f"        worker: t.forks{n}", "        transitions:",
                  f"          - {{on_signal: success, action: \"{then}\"}}", "          - {on_signal: failure, action: RETURN}"]
    return "\n".join(lines) + "\n"


# The five ways of ending run as five steps of one run (one `ontoflow run` and one worker
# process per timeout setting instead of one per case: 8 process pairs fewer, ~25 s of make test).
@pytest.mark.parametrize("timeout_ms", ["None", "5000"], ids=["no timeout", "with a timeout"])
def test_a_forked_child_exits_with_the_status_it_asked_for(tmp_path: Path, timeout_ms: str) -> None:
    caps = CAPS + "".join(CAP.replace("HOW", how).replace("N", str(n)).replace("MS", timeout_ms)
                          for n, (how, _) in enumerate(HOWS))
    (tmp_path / "caps.py").write_text(caps)
    (tmp_path / "wf.yaml").write_text(_workflow())
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env.update(PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    ran = subprocess.run([sys.executable, "-m", "ontoflow", "run", "wf.yaml", "-c", "caps.py", "--json"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert ran.returncode == 0, ran.stderr[-2000:]
    answer = json.loads(ran.stdout)
    assert answer["status"] == "completed", answer
    assert answer["context"] == {f"t.status{n}": status for n, (_, status) in enumerate(HOWS)}, answer
    for n, (how, status) in enumerate(HOWS):
        came_back = f"a process forked by capability 't.forks{n}' came back out of its execute()" in ran.stderr
        assert came_back == (status == 70), (how, ran.stderr[-2000:])
    assert "bye" in ran.stderr  # as Python prints an exit's text (raise SystemExit('bye'))
