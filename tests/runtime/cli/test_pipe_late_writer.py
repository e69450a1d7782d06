"""A named pipe as a document, ``--config`` or ``--input-file``: one reader for all
(``runtime.documents.read_bounded``).

- ``ontoflow run FIFO`` on a pipe nothing writes to waited for ever, printing nothing (the
  config and input-file readers had been fixed, the document reader not); it is refused,
  exit 2, naming the file, once no program opened it for a few seconds.
- A writer that opens the pipe only after ontoflow did (``mkfifo p; gen > p & ontoflow
  --config p``, a shell's process substitution through a named pipe) was refused at once,
  since at the instant of the read no program held it; it is waited for, and read.

Real ``ontoflow`` processes; the test's writer opens the pipe only once ontoflow holds it
open to read (a non-blocking open for writing fails until a reader holds it).
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
WORKFLOW = REPO / "configs/examples/building_report/workflow.yaml"
NOWHERE = "ipc:///nonexistent/ontoflow-red22c.sock"


def _start(tmp: Path, *args: str, **more_env: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["XDG_CONFIG_HOME"] = str(tmp / "xdg")
    env.update(more_env)
    return subprocess.Popen([sys.executable, "-m", "ontoflow", *args], cwd=tmp, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _write_once_read(proc: subprocess.Popen[bytes], fifo: Path, data: bytes) -> bool:
    """Write ``data`` into ``fifo`` once ``proc`` opened it to read; False if ``proc`` ended first."""
    deadline = time.monotonic() + 60  # a bound on a hung test, not a measure
    while time.monotonic() < deadline:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            assert exc.errno == errno.ENXIO, exc  # no reader yet
            try:
                proc.wait(timeout=0.01)  # paces the tries, and sees the process end
            except subprocess.TimeoutExpired:
                continue
            return False
        try:
            os.set_blocking(fd, True)
            os.write(fd, data)
        finally:
            os.close(fd)
        return True
    raise AssertionError("ontoflow never opened the pipe")


def _finish(proc: subprocess.Popen[bytes]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=120)
    text = err.decode()
    assert "Traceback" not in text, text
    return proc.returncode, out.decode(), text


def test_a_config_pipe_whose_writer_comes_late_is_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "cfg.fifo")
    proc = _start(tmp_path, "--config", "cfg.fifo", "runs")
    wrote = _write_once_read(proc, tmp_path / "cfg.fifo", f'[client]\nconnect = "{NOWHERE}"\ntimeout = 0.2\n'.encode())
    code, _, err = _finish(proc)
    assert wrote, err
    # The file's address and timeout applied: no answer from it within 0.2 s (exit 1).
    assert code == 1 and f"no answer from {NOWHERE} within 0.2 s" in err, err


def test_an_input_file_pipe_whose_writer_comes_late_is_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "inputs.json")
    proc = _start(tmp_path, "run", str(WORKFLOW), "--input-file", "inputs.json", "--json")
    wrote = _write_once_read(proc, tmp_path / "inputs.json", b'{"acme.late": "here"}')
    code, out, err = _finish(proc)
    assert wrote and code == 0, err
    assert '"acme.late":"here"' in out


def test_a_manifest_pipe_whose_writer_comes_late_is_run(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "wf.yaml")
    proc = _start(tmp_path, "run", "wf.yaml", "--no-check", "--json")  # a pipe is read once: no check
    wrote = _write_once_read(proc, tmp_path / "wf.yaml", WORKFLOW.read_bytes())
    code, out, err = _finish(proc)
    assert wrote and code == 0, err
    assert '"status":"completed"' in out


def test_a_manifest_pipe_nothing_writes_to_is_refused(tmp_path: Path) -> None:
    # It waited for ever (the bound of communicate() ended it, a failure here).
    os.mkfifo(tmp_path / "wf.yaml")
    code, out, err = _finish(_start(tmp_path, "run", "wf.yaml", ONTOFLOW_PIPE_WAIT_S="0.3"))
    assert code == 2 and out == "", err
    assert "wf.yaml: cannot read the file: is a pipe no program writes to (none opened it within 0.3 s)" in err, err
