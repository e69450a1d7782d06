"""Helpers for tests that run the real ``ontoflow`` command in child processes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.integration._cli import Ran, run_ontoflow

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "configs" / "examples" / "building_report"


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
        return run_ontoflow(workdir, *args, timeout=timeout)

    return run
