"""A value in the configuration file that no flag would take is refused naming the file and
the key, not the flag the user never typed: real ``python -m ontoflow`` processes.

Before, ``[client] connect = "bogus"`` was refused as ``--connect (or ONTOFLOW_CONNECT)
'bogus'`` and ``[client] timeout = inf`` as ``--timeout must be...``: the user looked for a flag
or a variable that was not there, and the file went unnamed. ``[daemon]`` and ``[worker]``
numbers were already named by their key (``_bounds``); the addresses and the client's
timeouts were not.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _ontoflow(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["XDG_CONFIG_HOME"] = str(folder / "xdg")
    return subprocess.run([sys.executable, "-m", "ontoflow", *args], cwd=folder, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL, env=env)


@pytest.mark.parametrize(("text", "verb", "key"), [
    ('[client]\nconnect = "bogus"\n', ["runs"], "client.connect"),
    ('[client]\nconnect = "tcp://127.0.0.1:99999"\n', ["status", "r1"], "client.connect"),
    ('[client]\nconnect = "ipc:///tmp/x.sock"\ntimeout = inf\n', ["runs"], "client.timeout"),
    ('[client]\nconnect = "ipc:///tmp/x.sock"\ntimeout = -1.0\n', ["runs"], "client.timeout"),
    ('[client]\nask-timeout = 0.0\n', ["ask", "hello"], "client.ask-timeout"),
    ('[daemon]\nbind = "bogus"\n', ["daemon"], "daemon.bind"),
    ('[worker]\nconnect = "tcp://nohost"\n', ["worker"], "worker.connect"),
])
def test_a_bad_value_in_the_file_names_the_file_and_the_key(tmp_path: Path, text: str, verb: list[str],
                                                            key: str) -> None:
    config = tmp_path / "settings.toml"
    config.write_text(text)
    ran = _ontoflow(tmp_path, "--config", str(config), *verb)
    assert ran.returncode == 2, ran.stderr
    assert f"config file {config}: {key}" in ran.stderr, ran.stderr
    assert "Traceback" not in ran.stderr and ran.stdout == ""


def test_with_json_it_is_one_json_error(tmp_path: Path) -> None:
    (tmp_path / "ontoflow.toml").write_text('[client]\nconnect = "bogus"\n')
    ran = _ontoflow(tmp_path, "runs", "--json")
    assert ran.returncode == 2
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and '"code":"invalid"' in lines[0] and "client.connect" in lines[0], ran.stderr


def test_a_flag_or_the_environment_still_names_itself(tmp_path: Path) -> None:
    ran = _ontoflow(tmp_path, "runs", "--connect", "bogus")
    assert ran.returncode == 2 and "--connect (or ONTOFLOW_CONNECT) 'bogus'" in ran.stderr, ran.stderr
    ran = _ontoflow(tmp_path, "runs", "--connect", "ipc:///tmp/x.sock", "--timeout", "inf")
    assert ran.returncode == 2 and "--timeout must be" in ran.stderr, ran.stderr
