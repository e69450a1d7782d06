"""``--log-file`` naming a named pipe no program reads is refused once the pipe wait has passed
(``ONTOFLOW_PIPE_WAIT_S``), exit 2, naming it: opening it to write waited for a reader for ever,
before the verb began, printing nothing. A reader that comes within the wait gets the log, as a
document's pipe waits for its writer. Real processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

NOWHERE = "ipc:///nonexistent/ontoflow-red21c.sock"


def _env(tmp: Path, wait_s: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["XDG_CONFIG_HOME"] = str(tmp / "xdg")
    env["ONTOFLOW_PIPE_WAIT_S"] = wait_s
    return env


_ARGV = [sys.executable, "-m", "ontoflow", "runs", "--connect", NOWHERE, "--timeout", "0.2",
         "--log-level", "debug", "--log-file", "log.fifo"]


def _runs(tmp: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(_ARGV, cwd=tmp, env=_env(tmp, "0.3"), capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)


def test_a_pipe_no_program_reads_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "log.fifo")
    done = _runs(tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr == ("ontoflow: --log-file log.fifo: a pipe no program reads "
                           "(none opened it within 0.3 s; start its reader first)\n")


def test_a_pipe_a_program_reads_gets_the_log(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "log.fifo")
    reader = os.open(tmp_path / "log.fifo", os.O_RDONLY | os.O_NONBLOCK)
    try:
        done = _runs(tmp_path)
    finally:
        os.close(reader)
    assert done.returncode == 1 and f"no answer from {NOWHERE}" in done.stderr, done.stderr


@pytest.mark.anyio
async def test_a_reader_that_comes_within_the_wait_gets_the_log(tmp_path: Path) -> None:
    # `ontoflow run ... --log-file p & cat p`: the reader opened the pipe a moment after the
    # command, which had already refused it.
    os.mkfifo(tmp_path / "log.fifo")
    child = subprocess.Popen(_ARGV, cwd=tmp_path, env=_env(tmp_path, "120"), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        with anyio.fail_after(60):  # until the command waits between two tries, having found no reader
            while _waits_on_a_timer(child.pid) is False and child.poll() is None:
                await anyio.sleep(0.01)
        reader = os.open(tmp_path / "log.fifo", os.O_RDONLY | os.O_NONBLOCK)
        try:
            _, err = child.communicate(timeout=60)
        finally:
            os.close(reader)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == 1 and f"no answer from {NOWHERE}" in err, err


def _waits_on_a_timer(pid: int) -> bool:
    with open(f"/proc/{pid}/wchan") as fh:
        return fh.read().strip() == "hrtimer_nanosleep"
