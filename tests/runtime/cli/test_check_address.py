"""``--connect`` / ``--bind`` / ``ONTOFLOW_CONNECT``: an address ZeroMQ cannot take is a usage
error (exit 2) naming the flag, before any socket opens. A tcp address without a port (or with
a port no TCP has) passed the scheme check and failed at connect, exit 1 with ZeroMQ's
'Invalid argument', and a ``user:password@`` in it was quoted back whole."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ontoflow.runtime.cli._client import check_address
from ontoflow.runtime.errors import ConfigError


@pytest.mark.parametrize(
    "address",
    ["tcp://127.0.0.1:7100", "tcp://127.0.0.1:0", "tcp://0.0.0.0:0", "tcp://*:7100", "tcp://127.0.0.1:*",
     "tcp://[::1]:1", "tcp://localhost:65535", "tcp://eth0:7100", "ipc:///tmp/x.sock", "inproc://x"],
)
def test_addresses_zeromq_takes_pass(address: str) -> None:
    check_address(address)


@pytest.mark.parametrize(
    "address",
    ["tcp://host", "tcp://127.0.0.1:", "tcp://:7100", "tcp://127.0.0.1:99999", "tcp://127.0.0.1:-1",
     "tcp://127.0.0.1:port", "tcp://a b:1", "tcp://127.0.0.1:7100/path"],
)
def test_a_tcp_address_without_a_usable_host_and_port_is_a_usage_error(address: str) -> None:
    with pytest.raises(ConfigError, match=r"--connect \(or ONTOFLOW_CONNECT\) .*tcp://HOST:PORT"):
        check_address(address)


def test_a_password_in_an_address_is_never_quoted() -> None:
    with pytest.raises(ConfigError) as caught:
        check_address("tcp://user:s3cret@host:1", "--bind")
    assert "s3cret" not in str(caught.value) and "--bind" in str(caught.value)
    with pytest.raises(ConfigError) as caught:  # cut to 80 before hiding, a long one showed
        check_address("tcp://user:" + "p" * 100 + "@host:1", "--bind")
    assert "pppp" not in str(caught.value)


def test_the_cli_exits_2_on_an_address_without_a_port(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "ontoflow", "runs", "--connect", "tcp://host", "--timeout", "1"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "tcp://HOST:PORT" in done.stderr and "Traceback" not in done.stderr
