"""``--input`` naming a key twice (``--input a.b=1 --input a.b=2``): the last one won silently,
so a script that appended a pair to a line already holding one for the key ran with a value
nobody saw chosen. It is refused, exit 2, naming the key and both positions, never a value.
``--input`` over ``--input-file`` for the same key still wins (the documented override)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ontoflow.runtime.cli._shared import parse_inputs
from ontoflow.runtime.errors import ConfigError

REPO = Path(__file__).resolve().parents[3]
WORKFLOW = REPO / "configs/examples/building_report/workflow.yaml"


def _run(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["XDG_CONFIG_HOME"] = str(tmp / "xdg")
    return subprocess.run([sys.executable, "-m", "ontoflow", *args], cwd=tmp, env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)


def test_a_key_twice_is_refused_naming_it_and_both_positions() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_inputs(["acme.a=first-value", "acme.b=1", "acme.a=second-value"])
    text = str(caught.value)
    assert text == "--input #3: 'acme.a' is given twice (also --input #1): give each key once"


def test_the_cli_refuses_it_before_anything_runs(tmp_path: Path) -> None:
    done = _run(tmp_path, "run", str(WORKFLOW), "--input", "acme.a=hunter2", "--input", "acme.a=s3cret", "--json")
    assert done.returncode == 2 and done.stdout == "", done.stderr
    error = json.loads(done.stderr.strip().splitlines()[-1])["error"]
    assert error["code"] == "invalid" and "'acme.a' is given twice" in error["message"]
    assert "hunter2" not in done.stderr and "s3cret" not in done.stderr


def test_an_input_over_the_input_file_still_wins(tmp_path: Path) -> None:
    (tmp_path / "in.json").write_text('{"acme.a": "from-file", "acme.b": 1}')
    done = _run(tmp_path, "run", str(WORKFLOW), "--input-file", "in.json", "--input", "acme.a=from-flag", "--json")
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["context"]
    assert context["acme.a"] == "from-flag" and context["acme.b"] == 1


def test_an_input_file_given_twice_is_a_usage_error(tmp_path: Path) -> None:
    # The second file alone was read: a user who meant both ran without the first's inputs.
    (tmp_path / "a.json").write_text('{"acme.a": 1}')
    (tmp_path / "b.json").write_text('{"acme.b": 2}')
    done = _run(tmp_path, "run", str(WORKFLOW), "--input-file", "a.json", "--input-file", "b.json", "--json")
    assert done.returncode == 2 and done.stdout == "", done.stderr
    error = json.loads(done.stderr.strip().splitlines()[-1])["error"]
    assert error["code"] == "usage" and "--input-file: given twice" in error["message"]
