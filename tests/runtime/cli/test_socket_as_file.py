"""A Unix socket named where a file goes: ``--log-file`` said "a pipe no program reads (start
its reader first)" (any ``ENXIO`` was taken for a FIFO, so was ``/dev/tty`` without a
terminal), and a document, ``--config`` or ``--input-file`` said "No such device or address".
Each now says it is a socket, exit 2. Real processes and a real socket."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
WORKFLOW = REPO / "configs/examples/building_report/workflow.yaml"


@pytest.fixture
def sock(tmp_path: Path):
    listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listening.bind(str(tmp_path / "s.sock"))
    listening.listen()
    try:
        yield "s.sock"
    finally:
        listening.close()


def _cli(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["XDG_CONFIG_HOME"] = str(tmp / "xdg")
    return subprocess.run([sys.executable, "-m", "ontoflow", *args], cwd=tmp, env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)


@pytest.mark.parametrize(("args", "says"), [
    (["run", str(WORKFLOW), "--log-file", "s.sock"], "--log-file s.sock: is a socket, not a file"),
    (["run", "s.sock"], "s.sock: cannot read the file: is a socket, not a file"),
    (["run", str(WORKFLOW), "--input-file", "s.sock"], "--input-file s.sock: cannot read the file: is a socket"),
    (["--config", "s.sock", "runs"], "config file s.sock: cannot read it: is a socket, not a file"),
])
def test_a_socket_is_named_as_one(tmp_path: Path, sock: str, args: list[str], says: str) -> None:
    done = _cli(tmp_path, *args)
    assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr, done.stderr
