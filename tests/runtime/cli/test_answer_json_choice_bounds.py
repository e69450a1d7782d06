"""``ontoflow answer RUN CHOICE --json-choice`` refuses a choice no message can carry, naming
CHOICE (exit 2), as ``submit --input`` does: an integer past 64 bits ended in an
``OverflowError`` traceback as the Answer was encoded; a choice nested past what can be read,
in a ``RecursionError`` traceback. Nothing is sent."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

NOWHERE = "ipc:///nonexistent/ontoflow-answer.sock"


@pytest.mark.parametrize("choice, said", [
    ("18446744073709551616", "CHOICE: holds an integer past 64 bits"),
    ('{"a": [1, -9223372036854775809]}', "CHOICE: holds an integer past 64 bits"),
    ("[" * 50_000 + "]" * 50_000, "CHOICE: nested too deep to read"),
])
def test_a_choice_no_message_can_carry_is_refused_naming_choice(tmp_path: Path, choice: str, said: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    done = subprocess.run([sys.executable, "-m", "ontoflow", "answer", "01abc", choice, "--json-choice",
                           "--connect", NOWHERE, "--timeout", "0.2"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert said in done.stderr and "18446744073709551616" not in done.stderr
