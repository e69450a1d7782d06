"""A capability whose start fails with an exception whose text cannot be read (its ``__str__``
raises ``SystemExit``) cannot start for good: ``ontoflow worker`` exits 78 naming it, the text
said unprintable. The exit escaped the reading of the text: the worker exited 0 without a word
(``ontoflow run`` restarted it three times, then said "more than 3 restarts"; red23b noticed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

CAPS = '''
from ontoflow import Capability, CapabilityMetadata, Result


class Unreadable(ValueError):
    def __str__(self):
        raise SystemExit(0)


class Init(Capability):
    metadata = CapabilityMetadata(id="t.start.unreadable", events=["success", "failure"])

    async def initialize(self):
        raise Unreadable()

    async def execute(self, inputs, context):
        return Result(event="success")


CAPABILITIES = [Init]
'''


def test_a_start_failing_with_an_unreadable_error_exits_78_naming_it(tmp_path: Path) -> None:
    (tmp_path / "caps.py").write_text(CAPS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(tmp_path), os.environ.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-m", "ontoflow", "worker", "--connect", "tcp://127.0.0.1:1",
                           "-c", "caps.py", "--no-builtins"], cwd=tmp_path, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert done.returncode == 78, done.stderr[-2000:]
    said = "capability 't.start.unreadable' could not initialise: Unreadable: <unprintable message>"
    assert said in done.stderr and "Traceback" not in done.stderr, done.stderr[-2000:]
