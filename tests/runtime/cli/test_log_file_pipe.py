"""``--log-file`` naming a named pipe no program reads is refused at once, exit 2, naming it:
opening it to write waited for a reader for ever, before the verb began, printing nothing. A
pipe a program reads is written to as before. Real processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

NOWHERE = "ipc:///nonexistent/ontoflow-red21c.sock"


def _runs(tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["XDG_CONFIG_HOME"] = str(tmp / "xdg")
    return subprocess.run([sys.executable, "-m", "ontoflow", "runs", "--connect", NOWHERE, "--timeout", "0.2",
                           "--log-level", "debug", "--log-file", "log.fifo"],
                          cwd=tmp, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)


def test_a_pipe_no_program_reads_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "log.fifo")
    done = _runs(tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr == "ontoflow: --log-file log.fifo: a pipe no program reads (start its reader first)\n"


def test_a_pipe_a_program_reads_gets_the_log(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "log.fifo")
    reader = os.open(tmp_path / "log.fifo", os.O_RDONLY | os.O_NONBLOCK)
    try:
        done = _runs(tmp_path)
    finally:
        os.close(reader)
    assert done.returncode == 1 and f"no answer from {NOWHERE}" in done.stderr, done.stderr
