"""A run whose context holds a map keyed by ``None``, a boolean or a tuple (a capability's
output, a YAML static memory) is printed, in text and with ``--json``, with those keys as their
JSON text (``null``, ``true``, ``[1,2]``): ``ontoflow run`` ended in a ``TypeError`` traceback
after the run had completed. Real processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec

from ontoflow.protocols.json_text import json_text

CAPS = '''
from ontoflow import Capability, CapabilityMetadata, Result

class OddKeys(Capability):
    metadata = CapabilityMetadata(id="t.odd", events=["success"], outputs=["t.odd"])

    async def execute(self, inputs, context):
        return Result(event="success", outputs={"t.odd": {None: 1, True: 2, (1, 2): 3, "a": 4}})
'''
WORKFLOW = "name: oddkeys\nnodes:\n  main:\n    entry_block: a\n    blocks:\n      a: {worker: t.odd, transitions: []}\n"


def _run(tmp: Path, *more: str) -> subprocess.CompletedProcess[str]:
    (tmp / "caps.py").write_text(CAPS)
    (tmp / "w.yaml").write_text(WORKFLOW)
    return subprocess.run([sys.executable, "-m", "ontoflow", "run", "w.yaml", "-c", "caps.py", "--transport", "inproc",
                           *more], cwd=tmp, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)


def test_the_text_answer_shows_odd_keys_as_json_text(tmp_path: Path) -> None:
    done = _run(tmp_path)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert '  t.odd = {"null":1,"true":2,"[1,2]":3,"a":4}' in done.stdout.splitlines()


def test_the_json_answer_shows_odd_keys_as_json_text(tmp_path: Path) -> None:
    done = _run(tmp_path, "--json")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert json.loads(done.stdout)["context"]["t.odd"] == {"null": 1, "true": 2, "[1,2]": 3, "a": 4}


class _Holder(msgspec.Struct):
    context: dict


def test_a_struct_holding_odd_keys_is_written_through_them() -> None:
    assert json_text(_Holder({None: {False: [1]}})) == '{"context":{"null":{"false":[1]}}}'
