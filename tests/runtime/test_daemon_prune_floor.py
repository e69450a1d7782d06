"""``--prune-every-s`` has a floor (red team, session 21): 0 was refused, but 1e-9 was taken
and the retention loop then pruned without pause, a SQLite query per turn of the daemon's loop.
A value under ``MIN_PRUNE_EVERY_S`` is refused at start, exit 2 naming the flag (and as a
configuration file's key, and by ``DaemonConfig``'s own check); the tests' small intervals
(0.02 s and up) still pass."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ontoflow.runtime.daemon import DaemonConfig, serve_daemon
from ontoflow.runtime.daemon_config import MIN_PRUNE_EVERY_S, check_config
from ontoflow.runtime.errors import ConfigError


@pytest.mark.parametrize("value", ["1e-9", "0.001"])
def test_a_prune_interval_under_the_floor_is_refused_naming_the_flag(tmp_path: Path, value: str) -> None:
    argv = [sys.executable, "-m", "ontoflow", "daemon", "--bind", f"ipc://{tmp_path}/d.sock",
            "--journal", str(tmp_path / "j.sqlite"), "--retention-s", "60", "--prune-every-s", value]
    # Before the floor the daemon started and served: the timeout is the failure.
    done = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=30, check=False)
    assert done.returncode == 2, done.stderr
    assert "--prune-every-s" in done.stderr and f"{MIN_PRUNE_EVERY_S:g}" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_configuration_refuses_it_too(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--prune-every-s"):
        check_config(DaemonConfig(bind=f"ipc://{tmp_path}/d.sock", prune_every_s=1e-9))
    check_config(DaemonConfig(bind=f"ipc://{tmp_path}/d.sock", prune_every_s=MIN_PRUNE_EVERY_S))


@pytest.mark.anyio
async def test_serve_daemon_refuses_it_before_opening_anything(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--prune-every-s"):
        await serve_daemon(DaemonConfig(bind=f"ipc://{tmp_path}/d.sock", journal=str(tmp_path / "j.sqlite"),
                                        retention_s=60, prune_every_s=0.0001, announce=False))
    assert not (tmp_path / "j.sqlite").exists()


def test_the_smallest_interval_the_tests_use_is_taken() -> None:
    assert MIN_PRUNE_EVERY_S <= 0.02
