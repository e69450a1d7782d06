"""A capability's own task that raises ``SystemExit`` (one it started in ``initialize()``) ends
neither ``run_manifest``'s caller nor a worker process: it is logged, ``capability_task_exited``,
naming the task's function, and the run goes on. Before, the exit left the event loop (plain
asyncio and uvloop alike): the caller's process ended, a worker process died with its steps,
and the exit's text (a connection URL with its password) was printed on stderr. A task's
exception no one retrieved is logged by type, not with its traceback and text."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from ontoflow import Capability, CapabilityMetadata, Result, run_manifest
from ontoflow.actors.worker import run_guarded

REPO = Path(__file__).resolve().parents[3]
SECRET = "hunter2-pw"

CAPS = f'''
import asyncio
from ontoflow import Capability, CapabilityMetadata, Result


async def _reader():
    await asyncio.sleep(0)
    raise SystemExit("lost postgres://admin:{SECRET}@db/x")


class SpawnsAnExit(Capability):
    metadata = CapabilityMetadata(id="t.bg.exit", events=["success", "failure"])

    async def initialize(self):
        self.task = asyncio.ensure_future(_reader())

    async def execute(self, inputs, context):
        await asyncio.wait({{self.task}})  # the exit has happened by the time the step answers
        return Result(event="success")
'''
namespace: dict[str, Any] = {}
exec(compile(CAPS, "caps", "exec"), namespace)
SpawnsAnExit: type[Capability] = namespace["SpawnsAnExit"]
DOC = {"start": "m", "nodes": {"m": {"entry_block": "b", "blocks": {"b": {"worker": "t.bg.exit"}}}}}


def test_run_manifest_survives_a_capability_task_that_exits(capfd: pytest.CaptureFixture[str]) -> None:
    with capture_logs() as logs:
        result = run_manifest(DOC, [SpawnsAnExit])
    assert result.status == "completed"
    told = [e for e in logs if e["event"] == "capability_task_exited"]
    assert told == [{"event": "capability_task_exited", "exc_type": "SystemExit", "task": "_reader",
                     "log_level": "error"}]
    out, err = capfd.readouterr()
    assert SECRET not in out + err


@pytest.mark.parametrize("transport", ["ipc", "inproc"])
def test_ontoflow_run_survives_it_in_a_worker_process_and_in_process(tmp_path: Path, transport: str) -> None:
    (tmp_path / "caps.py").write_text(CAPS)
    (tmp_path / "wf.yaml").write_text("name: bg\nstart: m\nnodes:\n  m:\n    entry_block: b\n    blocks:\n"
                                      "      b:\n        worker: t.bg.exit\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-m", "ontoflow", "run", "wf.yaml", "-c", "caps.py", "--no-builtins",
                           "--transport", transport], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "completed" in done.stdout and "capability_task_exited" in done.stderr
    assert SECRET not in done.stdout + done.stderr and "worker_lost" not in done.stdout


def test_the_main_tasks_own_exit_still_ends_the_call() -> None:
    async def main() -> None:
        sys.exit(3)

    with pytest.raises(SystemExit) as raised:
        run_guarded(main)
    assert raised.value.code == 3


def test_a_task_exception_no_one_retrieved_is_logged_by_type_only(capfd: pytest.CaptureFixture[str]) -> None:
    async def fails() -> None:
        raise RuntimeError(f"postgres://admin:{SECRET}@db/x")

    async def main() -> int:
        task = asyncio.ensure_future(fails())
        await asyncio.wait({task})
        del task
        gc.collect()  # the task's finaliser reports the exception no one retrieved
        return 7

    with capture_logs() as logs:
        assert run_guarded(main) == 7
    assert [(e["event"], e["exc_type"], e["task"]) for e in logs] == [("event_loop_error", "RuntimeError",
                                                                       "test_a_task_exception_no_one_retrieved_is_logged_by_type_only.<locals>.fails")]
    out, err = capfd.readouterr()
    assert SECRET not in out + err
