"""Run the real ``ontoflow`` command in a child process (shared by the CLI tests)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec


class Ran(msgspec.Struct):
    """What a finished ``ontoflow`` process left behind."""

    code: int
    stdout: str
    stderr: str

    def json(self) -> dict:
        """stdout decoded as the one JSON object of ``--json``."""
        return msgspec.json.decode(self.stdout)


def run_ontoflow(cwd: Path, *args: str, env: dict | None = None, timeout: float = 60) -> Ran:
    """``python -m runtime ARGS...`` in ``cwd``, no stdin; returns what it printed and its code."""
    proc = subprocess.run(
        [sys.executable, "-m", "ontoflow", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    return Ran(proc.returncode, proc.stdout, proc.stderr)
