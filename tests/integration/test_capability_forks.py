"""A process a capability forks does not live on as a copy of its worker (red19c, session 19).

A capability that calls ``os.fork()`` and lets the child return from ``execute`` (or raise out
of it) had that child go on as a copy of the worker host, its event loop and sockets with it:
the run completed (the parent answered), and the child, reparented to init, spun at 100% of a
core for ever. Now a child that comes back out of ``execute`` exits at once (status 70), saying
so on stderr; the parent's answer is the step's, and the worker goes on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

REPO = Path(__file__).resolve().parents[2]

CAPS = '''
import os
from pathlib import Path

from ontoflow import Capability, CapabilityMetadata


class Forks(Capability):
    metadata = CapabilityMetadata(id="t.forks", outputs=["t.who"], timeout_ms=MS)

    async def execute(self, inputs, context):
        if os.fork() == 0:  # the child
            Path(os.environ["FORK_PIDS"]).open("a").write(f"{os.getpid()}\\n")
            HOW
        return {"t.who": "parent"}
'''


@pytest.mark.parametrize("timeout_ms", ["None", "5000"], ids=["no timeout", "with a timeout"])
@pytest.mark.parametrize("how", ['return {"t.who": "child"}', 'raise RuntimeError("child")'], ids=["returns", "raises"])
def test_a_forked_child_coming_back_out_of_execute_exits_and_the_run_completes(tmp_path: Path, how: str,
                                                                               timeout_ms: str) -> None:
    (tmp_path / "caps.py").write_text(CAPS.replace("HOW", how).replace("MS", timeout_ms))
    (tmp_path / "wf.yaml").write_text("name: f\nstart: m\nnodes:\n  m:\n    entry_block: b\n    blocks:\n"
                                      "      b:\n        worker: t.forks\n")
    pids = tmp_path / "pids"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env.update(PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""), FORK_PIDS=str(pids))
    try:
        # The child holds the pipes: before, this waited for it to its timeout.
        ran = subprocess.run([sys.executable, "-m", "ontoflow", "run", "wf.yaml", "-c", "caps.py", "--json"],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        children = [int(line) for line in pids.read_text().split()]
        assert ran.returncode == 0, ran.stderr[-2000:]
        answer = json.loads(ran.stdout)
        assert answer["status"] == "completed" and answer["context"] == {"t.who": "parent"}, answer
        assert len(children) == 1
        for pid in children:  # it ends by itself (before: it spun for ever)
            try:
                psutil.Process(pid).wait(timeout=30)
            except psutil.NoSuchProcess:
                pass
        assert "a process forked by capability 't.forks' came back out of its execute()" in ran.stderr
    finally:
        for pid in [int(line) for line in pids.read_text().split()] if pids.exists() else []:
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
