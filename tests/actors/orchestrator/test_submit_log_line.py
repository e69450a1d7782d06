"""The line a submit logs stays small whatever the inputs: their keys are listed up to a bound.

A ``Submit`` may carry 4,096 input keys of 256 characters each; every key on the
``run_submitted`` line made a line of about 1 MB per submit (red20d).

Each case runs in a process of its own: a test before it in this process may have configured
logging (the CLI's entry points do, caching module loggers at their level), which would hide
an INFO line from ``capture_logs``.
"""

from __future__ import annotations

import subprocess
import sys

import msgspec

_SUBMIT = """
import sys
import msgspec
from structlog.testing import capture_logs
from ontoflow.actors.orchestrator import compose_orchestrator
from tests.actors.orchestrator.parts import one_step

count = int(sys.argv[1])
inputs = {f"k{i:04d}." + "x" * 200: i for i in range(count)}
orch = compose_orchestrator(address="inproc://submit-log-line").orchestrator
with capture_logs() as logs:
    orch.submit(one_step(), inputs)
lines = [entry for entry in logs if entry["event"] == "run_submitted"]
sys.stdout.write(msgspec.json.encode({"lines": lines, "keys": sorted(inputs)}).decode())
"""


def _submitted(count: int) -> tuple[list[dict], list[str]]:
    ran = subprocess.run([sys.executable, "-c", _SUBMIT, str(count)], capture_output=True, text=True, timeout=120, check=True)
    found = msgspec.json.decode(ran.stdout)
    return found["lines"], found["keys"]


def test_a_submit_of_thousands_of_keys_logs_a_few_of_them_and_how_many() -> None:
    [line], keys = _submitted(4_096)
    assert line["input_key_count"] == 4_096
    assert line["input_keys"] == keys[:16]


def test_a_submit_of_a_few_keys_logs_them_all() -> None:
    [line], keys = _submitted(2)
    assert line["input_keys"] == keys and line["input_key_count"] == 2
