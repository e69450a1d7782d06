"""Helpers for tests that run the real ``ontoflow`` command in child processes."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "configs" / "examples" / "building_report"


class Ran(msgspec.Struct):
    """What a finished ``ontoflow`` process left behind."""

    code: int
    stdout: str
    stderr: str

    def json(self) -> dict:
        return msgspec.json.decode(self.stdout)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A folder holding a copy of the example at the relative path its manifests expect."""
    target = tmp_path / "configs" / "examples" / "building_report"
    shutil.copytree(EXAMPLE, target)
    return tmp_path


@pytest.fixture
def ontoflow(workdir: Path):
    """Run ``ontoflow ARGS...`` in ``workdir`` as a real process; returns a Ran."""

    def run(*args: str, timeout: float = 60) -> Ran:
        proc = subprocess.run(
            [sys.executable, "-m", "runtime", *args],
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        return Ran(proc.returncode, proc.stdout, proc.stderr)

    return run
