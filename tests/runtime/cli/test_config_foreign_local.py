"""``./ontoflow.toml`` found without being named is refused when another user owns it or
anyone may write it: run in a folder someone else made (a clone, /tmp), it chose the daemon a
client sends its inputs to (``connect``) and the server key it trusts, and the user saw
nothing. Named with ``--config`` it is read; one's own is read as before. Real processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

THEIRS = "ipc:///nonexistent/theirs.sock"


def _runs(tmp: Path, *argv: str) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["XDG_CONFIG_HOME"] = str(tmp / "xdg")
    done = subprocess.run([sys.executable, "-m", "ontoflow", *argv, "runs"], cwd=tmp, env=env, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert "Traceback" not in done.stderr
    return done.returncode, done.stderr


def _local(tmp: Path) -> Path:
    local = tmp / "ontoflow.toml"
    local.write_text(f'[client]\nconnect = "{THEIRS}"\ntimeout = 0.2\n')
    return local


def test_a_local_file_anyone_may_write_is_not_read_unless_named(tmp_path: Path) -> None:
    _local(tmp_path).chmod(0o666)
    code, err = _runs(tmp_path)
    assert code == 2 and "ontoflow.toml: not read, anyone may write it" in err and THEIRS not in err, err
    code, err = _runs(tmp_path, "--config", "ontoflow.toml")  # named: the user chose it
    assert code == 1 and f"no answer from {THEIRS}" in err, err


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_local_file_another_user_owns_is_not_read_unless_named(tmp_path: Path) -> None:
    os.chown(_local(tmp_path), 65534, -1)
    code, err = _runs(tmp_path)
    assert code == 2 and "ontoflow.toml: not read, another user owns it" in err, err
    code, err = _runs(tmp_path, "--config", "ontoflow.toml")
    assert code == 1 and f"no answer from {THEIRS}" in err, err


def test_ones_own_local_file_is_read(tmp_path: Path) -> None:
    _local(tmp_path).chmod(0o644)
    code, err = _runs(tmp_path)
    assert code == 1 and f"no answer from {THEIRS}" in err, err
