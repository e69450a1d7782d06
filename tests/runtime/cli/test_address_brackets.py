"""An IPv6 host in a tcp address is ``[...]`` whole: a bracket left open or stray is a usage
error (exit 2) naming the flag. Before, ``tcp://[::1`` passed the check (its last colon read
as the port's), reached ZeroMQ, and the client waited its whole ``--timeout`` to say "no answer
(is the daemon up?)", exit 1: a typo reported as a daemon that is down."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ontoflow.runtime.cli._client import check_address
from ontoflow.runtime.errors import ConfigError


@pytest.mark.parametrize("address", ["tcp://[::1", "tcp://::1]:7100", "tcp://[::1]x:7100", "tcp://[[::1]]:7100",
                                     "tcp://[]:7100", "tcp://host]:1",
                                     "tcp://[::1:5000;[::1]:7100", "tcp://[::1]:5000;[::1:7100"])
def test_a_bracket_open_or_stray_is_a_usage_error(address: str) -> None:
    with pytest.raises(ConfigError, match="tcp://HOST:PORT"):
        check_address(address)


@pytest.mark.parametrize("address", ["tcp://[::1]:7100", "tcp://[fe80::1%eth0]:1", "tcp://[::]:*",
                                     "tcp://[::1]:5000;[::1]:7100", "tcp://eth0;[::1]:7100"])
def test_an_ipv6_host_in_brackets_passes(address: str) -> None:
    check_address(address)


def test_the_client_exits_2_at_once_naming_the_flag(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "ontoflow", "runs", "--connect", "tcp://[::1", "--timeout", "1", "--json"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2, done.stderr
    assert '"code":"invalid"' in done.stderr and "--connect" in done.stderr and "Traceback" not in done.stderr
