"""An address the daemon cannot serve as given is refused with its configuration: exit 2
naming the flag, before anything is bound or ``listening on`` is printed.

Before, a non-loopback ``--http-bind`` without ``--http-token-file`` printed ``listening on
...`` (a script waiting for that line took the daemon as up) and then exited naming
``http_token``; a non-loopback ``--bind`` without CURVE exited 1 naming ``insecure``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

FINANCE = Path(__file__).resolve().parents[2] / "configs" / "examples" / "finance"


def _daemon(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "xdg"), XDG_STATE_HOME=str(tmp_path / "state"))
    return subprocess.run([sys.executable, "-m", "ontoflow", "daemon", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("address", ["tcp://0.0.0.0:0", "tcp://*:0"])
def test_a_non_loopback_bind_without_curve_is_a_usage_error_naming_the_flags(tmp_path: Path, address: str) -> None:
    ran = _daemon(tmp_path, "--bind", address)
    assert ran.returncode == 2 and "listening on" not in ran.stdout
    assert f"--bind {address}: not a loopback address" in ran.stderr and "--insecure" in ran.stderr


def test_a_non_loopback_http_entry_without_a_token_is_refused_before_listening(tmp_path: Path) -> None:
    ran = _daemon(tmp_path, "--bind", "tcp://127.0.0.1:0", "--domains", str(FINANCE), "--http-bind", "0.0.0.0:0")
    assert ran.returncode == 2 and "listening on" not in ran.stdout
    assert "--http-bind 0.0.0.0:0: a non-loopback address needs a bearer token (--http-token-file FILE)" in ran.stderr


def test_a_malformed_http_bind_is_refused_before_listening(tmp_path: Path) -> None:
    ran = _daemon(tmp_path, "--bind", "tcp://127.0.0.1:0", "--domains", str(FINANCE), "--http-bind", "nonsense")
    assert ran.returncode == 2 and "listening on" not in ran.stdout and "expected HOST:PORT" in ran.stderr
