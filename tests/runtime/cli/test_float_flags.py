"""Seconds given as NaN or infinity (argparse's float() takes "nan" and "inf", and so does a
TOML file). They passed the checks written as "< 0" / "<= 0" (every comparison with NaN is
false), then raised out of the event loop much later: a ValueError traceback at SIGTERM
(--grace-s) or at the first pruning an hour on (--retention-s, --prune-every-s), out of the
HTTP bridge (--http-timeout-s). Each is now refused at start with exit 2, naming the flag."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["daemon", "--grace-s", "nan"], "--grace-s"),
        (["daemon", "--retention-s", "inf"], "--retention-s"),
        (["daemon", "--prune-every-s", "nan", "--retention-s", "60"], "--prune-every-s"),
        (["worker", "--grace-s", "nan"], "--grace-s"),
        (["worker", "--reconnect-max", "nan"], "--reconnect-max"),
        (["worker", "--http-domain", "http://127.0.0.1:9", "--http-timeout-s", "nan"], "--http-timeout-s"),
    ],
    ids=["daemon-grace", "daemon-retention", "daemon-prune", "worker-grace", "worker-reconnect", "worker-http"],
)
def test_nan_or_infinite_seconds_are_refused_at_start(tmp_path: Path, argv: list[str], names: str) -> None:
    where = ["--bind" if argv[0] == "daemon" else "--connect", f"ipc://{tmp_path}/d.sock"]
    done = subprocess.run([sys.executable, "-m", "ontoflow", *argv, *where], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    assert names in done.stderr and "finite" in done.stderr and "Traceback" not in done.stderr
