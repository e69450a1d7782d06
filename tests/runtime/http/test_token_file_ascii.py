"""A token an HTTP header cannot carry is refused when the daemon starts, naming the file.

Before, a token file holding a non-ASCII letter (or a control character inside) started the
entry, and every request was a 401 with nothing to say why: a client cannot send such a token
(the official ``openai`` client raises ``UnicodeEncodeError`` before sending), and the entry
reads a header as latin-1 bytes, which never equal the token's UTF-8 ones."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ontoflow.runtime.errors import ConfigError
from ontoflow.runtime.http import read_token_file


@pytest.mark.parametrize("token", ["sécret-tøken-42", "secret\x07token", "sec\tret"])
def test_a_token_a_header_cannot_carry_is_refused_naming_the_file(tmp_path: Path, token: str) -> None:
    path = tmp_path / "token"
    path.write_text(token + "\n")
    path.chmod(0o600)
    with pytest.raises(ConfigError, match=r"--http-token-file .*token: the token has a character") as refused:
        read_token_file(path)
    assert token not in str(refused.value)


def test_the_daemon_with_such_a_token_does_not_start(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("sécret-tøken-42")
    path.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "xdg"), XDG_STATE_HOME=str(tmp_path / "state"))
    finance = Path(__file__).resolve().parents[3] / "configs" / "examples" / "finance"
    ran = subprocess.run([sys.executable, "-m", "ontoflow", "daemon", "--bind", "tcp://127.0.0.1:0", "--domains",
                          str(finance), "--http-bind", "127.0.0.1:0", "--http-token-file", str(path)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert ran.returncode != 0 and "http entry on" not in ran.stdout
    assert "the token has a character an HTTP header cannot carry" in ran.stderr
    assert "tøken" not in ran.stderr
