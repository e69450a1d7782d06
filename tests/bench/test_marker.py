"""The harness's tests carry the ``bench`` marker, so ``-m "not bench"`` leaves them out."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[2]


def test_every_harness_test_is_marked_bench(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("bench") is not None
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "not bench", "tests/bench"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, cwd=_ROOT,
    )
    # Exit code 5: nothing selected. Every test of the folder was deselected by its marker.
    assert ran.returncode == 5, ran.stdout + ran.stderr
    assert "deselected" in ran.stdout
