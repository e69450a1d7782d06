"""Every reader of a document takes a name without a suffix as ``run`` does (JSON when the text
starts as JSON does, else YAML: ``runtime.documents.document_format``), and the public face's
``run_manifest`` reads a named file through the one bounded reader.

``ontoflow check /dev/stdin < wf.yaml`` was refused "not valid JSON at line 1, column 1" (the
checker decoded a name without a suffix as JSON), and ``run_manifest("/dev/zero", ...)`` read
until a MemoryError. Real processes and real files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ontoflow import run_manifest
from ontoflow.protocols import ManifestError

REPO = Path(__file__).resolve().parents[3]
WORKFLOW = REPO / "configs/examples/building_report/workflow.yaml"


def test_check_reads_a_yaml_document_on_stdin(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    done = subprocess.run([sys.executable, "-m", "ontoflow", "check", "/dev/stdin"], cwd=tmp_path, env=env,
                          input=WORKFLOW.read_bytes(), capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    assert b"not valid JSON" not in done.stdout + done.stderr


def test_run_manifest_refuses_a_device_without_reading_it() -> None:
    with pytest.raises(ManifestError, match="device"):
        run_manifest("/dev/zero", [])


def test_run_manifest_reads_a_suffixless_yaml_file(tmp_path: Path) -> None:
    copy = tmp_path / "workflow"
    copy.write_bytes(b"name: nothing\nstart: main\nnodes:\n  main:\n    blocks: []\n")
    with pytest.raises(ManifestError) as caught:
        run_manifest(copy, [])
    assert "not valid JSON" not in str(caught.value)
