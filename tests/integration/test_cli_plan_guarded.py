"""``ontoflow plan run`` and ``ontoflow pipeline run`` run their loop as ``ontoflow run`` does
(``run_guarded``): a capability's own task that raises ``SystemExit`` (with ``--transport
inproc``, in this process) is logged ``capability_task_exited`` and the run goes on to its end.
Before, the exit left the event loop: a traceback quoting the exit's text (a password), exit 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration._cli import run_ontoflow

SECRET = "hunter2-pw"

CAPS = f'''
import asyncio
from ontoflow import Capability, CapabilityMetadata, Result


async def _reader():
    await asyncio.sleep(0)
    raise SystemExit("lost postgres://admin:{SECRET}@db/x")


class SpawnsAnExit(Capability):
    metadata = CapabilityMetadata(id="t.bg.exit", events=["success", "failure"])

    async def execute(self, inputs, context):
        task = asyncio.ensure_future(_reader())
        await asyncio.wait({{task}})  # the exit has happened by the time the step answers
        return Result(event="success")
'''

DOCUMENTS = {
    "plan": "steps:\n  - {id: a, capability: t.bg.exit}\n",
    "pipeline": 'oml_version: "0.1.0"\nname: bg\nsteps:\n  - id: a\n    component: t.bg.exit\n'
                "    mode: transform\n    config: {}\n",
}

WORKFLOW = "name: bg\nstart: m\nnodes:\n  m:\n    entry_block: b\n    blocks:\n      b:\n        worker: t.bg.exit\n"


@pytest.mark.parametrize("verb", ["plan", "pipeline"])
def test_a_capability_task_that_exits_ends_the_run_as_ontoflow_run_does(tmp_path: Path, verb: str) -> None:
    (tmp_path / "caps.py").write_text(CAPS)
    (tmp_path / "doc.yaml").write_text(DOCUMENTS[verb])
    (tmp_path / "wf.yaml").write_text(WORKFLOW)
    flags = ("-c", "caps.py", "--no-builtins", "--transport", "inproc", "--json")
    ran = run_ontoflow(tmp_path, verb, "run", "doc.yaml", *flags, timeout=120)
    reference = run_ontoflow(tmp_path, "run", "wf.yaml", *flags, timeout=120)
    assert (ran.code, ran.json()["status"]) == (reference.code, reference.json()["status"]) == (0, "completed"), \
        ran.stderr[-2000:]
    assert "capability_task_exited" in ran.stderr
    assert "Traceback" not in ran.stderr and SECRET not in ran.stdout + ran.stderr
