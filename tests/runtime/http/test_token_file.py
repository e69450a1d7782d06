"""The HTTP entry's token file is a secret's file, treated as a CURVE secret key file is.

Found by harden11: ``--http-token-file`` was used whoever could read it, without a word, where
a CURVE secret key readable by everyone gets ``curve_secret_key_readable``. Now a regular file
readable by everyone is used with ``http_token_file_readable`` (its mode and the fix, never
the token); a pipe is not warned about (its mode says nothing of what flows through it).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from ontoflow.runtime.errors import ConfigError
from ontoflow.runtime.http import read_token_file

TOKEN = "s3cr3t-token-value"


def test_a_token_file_readable_by_everyone_is_used_with_a_warning_naming_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    path.chmod(0o644)
    with capture_logs() as logs:
        assert read_token_file(path) == TOKEN
    [warned] = [e for e in logs if e["event"] == "http_token_file_readable"]
    assert warned["mode"] == "0644" and warned["fix"] == f"chmod 600 {path}" and warned["log_level"] == "warning"
    assert TOKEN not in str(logs)


@pytest.mark.parametrize("mode", [0o600, 0o640])
def test_a_token_file_others_cannot_read_is_used_quietly(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "token"
    path.write_text(TOKEN)
    path.chmod(mode)
    with capture_logs() as logs:
        assert read_token_file(path) == TOKEN
    assert logs == []


def test_a_token_from_a_pipe_is_not_warned_about(tmp_path: Path) -> None:
    fifo = tmp_path / "token.fifo"
    os.mkfifo(fifo, 0o644)
    writer = threading.Thread(target=fifo.write_text, args=(TOKEN,))
    writer.start()
    try:
        with capture_logs() as logs:
            assert read_token_file(fifo) == TOKEN
    finally:
        writer.join(10)
    assert logs == []


@pytest.mark.parametrize(("content", "words"), [(b"", "the file is empty"), (b"  \n", "the file is empty"),
                                                (b"\xff\xfe" + TOKEN.encode(), "cannot read the file: not text")])
def test_a_token_file_without_a_token_is_a_config_error_naming_the_file_not_its_content(
        tmp_path: Path, content: bytes, words: str) -> None:
    path = tmp_path / "token"
    path.write_bytes(content)
    with pytest.raises(ConfigError) as caught:
        read_token_file(path)
    assert str(caught.value) == f"--http-token-file {path}: {words}"


def test_a_folder_is_not_a_token_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the file: is a folder, not a file"):
        read_token_file(tmp_path)
