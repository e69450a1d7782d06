"""The daemon's HTTP entry takes its connection bounds from ``--http-max-connections`` and
``--http-max-connections-per-client`` (and ``[daemon]`` keys of the same names): they ran at
the entry's defaults, whatever the host's descriptor limit or the clients behind one proxy.
Out-of-range values are refused naming the flag or the key (exit 2). Real daemon processes."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.test_fix23h_connection_flood import _closed_by_the_entry

REPO = Path(__file__).resolve().parents[2]
FINANCE = REPO / "configs" / "examples" / "finance"
PYTHON = [sys.executable, "-m", "ontoflow"]


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env.update(XDG_CONFIG_HOME=str(tmp / "xdg"), XDG_STATE_HOME=str(tmp / "state"))
    return env


def test_the_per_client_share_is_the_flags(tmp_path: Path) -> None:
    daemon = subprocess.Popen([*PYTHON, "daemon", "--bind", "tcp://127.0.0.1:0", "--domains", str(FINANCE),
                               "--http-bind", "127.0.0.1:0", "--http-max-connections-per-client", "3",
                               "--log-file", "daemon.log"], cwd=tmp_path, env=_env(tmp_path),
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    assert daemon.stdout is not None
    daemon.stdout.readline()
    http = daemon.stdout.readline().decode().split()[-1]
    host, _, port = http.removeprefix("http://").rpartition(":")
    flood: list[socket.socket] = []
    try:
        flood = [socket.create_connection((host, int(port)), timeout=30) for _ in range(10)]
        closed = _closed_by_the_entry(flood, 7, within_s=60)  # 64 by default: none would be
        assert len(closed) == 7 and all(b" 503 " in sent for sent in closed.values())
    finally:
        for s in flood:
            s.close()
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=60) == 0
        daemon.stdout.close()


@pytest.mark.parametrize("argv, named", [
    (["--http-max-connections", "0"], "--http-max-connections"),
    (["--http-max-connections-per-client", "x"], "--http-max-connections-per-client"),
    (["--http-max-connections", "70000"], "--http-max-connections"),
])
def test_a_bound_out_of_range_is_refused_naming_the_flag(tmp_path: Path, argv: list[str], named: str) -> None:
    done = subprocess.run([*PYTHON, "daemon", "--bind", "tcp://127.0.0.1:0", "--domains", str(FINANCE),
                           "--http-bind", "127.0.0.1:0", *argv], cwd=tmp_path, env=_env(tmp_path),
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert done.returncode == 2 and named in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_a_bound_out_of_range_in_the_config_file_is_refused_naming_the_key(tmp_path: Path) -> None:
    (tmp_path / "d.toml").write_text("[daemon]\nhttp-max-connections = 0\n")
    done = subprocess.run([*PYTHON, "--config", "d.toml", "daemon", "--bind", "tcp://127.0.0.1:0", "--domains",
                           str(FINANCE), "--http-bind", "127.0.0.1:0"], cwd=tmp_path, env=_env(tmp_path),
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert done.returncode == 2 and "daemon.http-max-connections" in done.stderr, done.stderr
