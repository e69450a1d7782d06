"""A client's ``--timeout`` (or ``[client] timeout``) of infinity: refused as NaN was, since the
README says seconds given as NaN or infinity are refused; with the daemon down, ``ontoflow runs
--timeout inf`` waited for ever (a hang, where the flag exists to bound the wait)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from ontoflow.runtime.cli._client import check_timeout
from ontoflow.runtime.errors import ConfigError


@pytest.mark.parametrize("timeout", [math.inf, math.nan, 0.0, -1.0, -math.inf])
def test_a_timeout_that_bounds_nothing_is_refused(timeout: float) -> None:
    with pytest.raises(ConfigError, match="--timeout must be a positive finite number of seconds"):
        check_timeout(timeout)


@pytest.mark.parametrize("timeout", [None, 0.001, 10.0, 604_800.0])
def test_a_finite_positive_timeout_passes(timeout: float | None) -> None:
    check_timeout(timeout)


def test_the_cli_exits_2_at_once_on_an_infinite_timeout(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "ontoflow", "runs", "--connect", f"ipc://{tmp_path}/none.sock",
                           "--timeout", "inf"], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert done.returncode == 2 and "--timeout" in done.stderr and "finite" in done.stderr
