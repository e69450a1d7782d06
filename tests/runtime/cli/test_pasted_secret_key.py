"""A CURVE secret key pasted where its file's name goes (``ONTOFLOW_CURVE_SECRET`` reads as
"the secret"): the command refuses it naming the setting, and never shows the key. Before,
it was echoed whole, twice for the variable: "cannot read key file KEY (from the environment:
ONTOFLOW_CURVE_SECRET=KEY)", on a terminal, in a CI log. Real ``ontoflow`` processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
import zmq

NOWHERE = "ipc:///nonexistent/ontoflow-red21c.sock"


def _run(tmp: Path, *args: str, **env: str) -> tuple[int, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    environ.update(XDG_CONFIG_HOME=str(tmp / "xdg"), **env)
    done = subprocess.run([sys.executable, "-m", "ontoflow", *args], cwd=tmp, env=environ, capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=60)
    return done.returncode, done.stderr.decode()


@pytest.fixture
def secret() -> str:
    return zmq.curve_keypair()[1].decode()


def test_a_key_in_the_environment_variable_is_named_never_shown(tmp_path: Path, secret: str) -> None:
    for extra in ({}, {"ONTOFLOW_CURVE_SERVER_KEY": "server.key"}):  # half a CURVE setting, or a whole one
        code, err = _run(tmp_path, "runs", "--json", ONTOFLOW_CONNECT=NOWHERE, ONTOFLOW_CURVE_SECRET=secret, **extra)
        assert code == 2 and secret not in err, err
        message = msgspec.json.decode(err)["error"]["message"]
        assert message.startswith("ONTOFLOW_CURVE_SECRET: names no file and is a z85 key itself"), message


@pytest.mark.parametrize("where", ["flag", "client config", "worker config", "daemon flag"])
def test_a_key_given_for_the_file_anywhere_is_named_never_shown(tmp_path: Path, secret: str, where: str) -> None:
    config = tmp_path / "ontoflow.toml"
    if where == "flag":
        argv = ["runs", "--connect", NOWHERE, "--curve-secret", secret, "--curve-server-key", "server.key"]
    elif where == "client config":
        config.write_text(f"[client]\nconnect = '{NOWHERE}'\ncurve-secret = '{secret}'\ncurve-server-key = 'server.key'\n")
        argv = ["runs"]
    elif where == "worker config":
        config.write_text(f"[worker]\nconnect = '{NOWHERE}'\ncurve-secret = '{secret}'\ncurve-server-key = 'server.key'\n")
        argv = ["worker"]
    else:
        argv = ["daemon", "--bind", "tcp://127.0.0.1:0", "--curve-secret", secret, "--authorized-keys", str(tmp_path)]
    code, err = _run(tmp_path, *argv)
    assert code == 2 and secret not in err and "Traceback" not in err, err
    assert "curve-secret" in err and "is a z85 key itself" in err, err


def test_a_key_file_that_is_missing_is_still_named_by_its_path(tmp_path: Path) -> None:
    code, err = _run(tmp_path, "runs", ONTOFLOW_CONNECT=NOWHERE, ONTOFLOW_CURVE_SECRET="gone.key_secret",
                     ONTOFLOW_CURVE_SERVER_KEY="server.key")
    assert code == 2 and "cannot read key file gone.key_secret" in err, err
