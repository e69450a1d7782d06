"""A document named without a suffix (``/dev/stdin``, ``<(...)``'s ``/dev/fd/63``) was decoded as
JSON whatever it held: ``cat wf.yaml | ontoflow run /dev/stdin --no-check`` was refused "not
valid JSON at line 1, column 1", though the same text in a ``.yaml`` file runs. Without a
suffix, a text that starts as JSON does (``{``, ``[``) is JSON, anything else YAML
(``runtime.documents.document_format``). Real processes, the document on a real pipe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ontoflow.runtime.documents import document_format

REPO = Path(__file__).resolve().parents[3]
WORKFLOW = REPO / "configs/examples/building_report/workflow.yaml"


def _cli(tmp: Path, given: bytes, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["XDG_CONFIG_HOME"] = str(tmp / "xdg")
    done = subprocess.run([sys.executable, "-m", "ontoflow", *args], cwd=tmp, env=env, capture_output=True,
                          input=given, timeout=120)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


def test_a_yaml_manifest_on_stdin_runs(tmp_path: Path) -> None:
    done = _cli(tmp_path, WORKFLOW.read_bytes(), "run", "/dev/stdin", "--no-check", "--json")
    assert done.returncode in (0, 1), done.stderr  # it ran (its model path is relative to /dev: a failure path)
    assert json.loads(done.stdout)["run_id"]


@pytest.mark.parametrize("text", [b"acme.x: 1\nacme.y: [a]\n", b' {"acme.x": 1, "acme.y": ["a"]}'])
def test_an_input_file_on_stdin_is_yaml_or_json(tmp_path: Path, text: bytes) -> None:
    done = _cli(tmp_path, text, "run", str(WORKFLOW), "--input-file", "/dev/stdin", "--json")
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["context"]
    assert context["acme.x"] == 1 and context["acme.y"] == ["a"]


def test_the_suffix_wins_when_there_is_one() -> None:
    assert document_format("a.toml", b"{") == ".toml"
    assert document_format("/dev/stdin", b"\xef\xbb\xbf[1]") == "json"
    assert document_format("/dev/fd/63", b"# a comment\nstart: m\n") == "yaml"
