"""``[client] ask-timeout``: ``ask``'s and ``chat``'s ``--timeout`` from the file, read by them
alone (a client verb's ``--timeout`` is another budget), flags still winning."""

from __future__ import annotations

from pathlib import Path

import pytest

from ontoflow.runtime.cli._asking import ASK_TIMEOUT_S
from ontoflow.runtime.cli._config import load_config, section_defaults
from ontoflow.runtime.cli._main import _apply_config, build_parser
from ontoflow.runtime.errors import ConfigError


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ontoflow.toml"
    path.write_text(text)
    return path


def test_ask_and_chat_read_ask_timeout_and_the_client_verbs_do_not(tmp_path: Path) -> None:
    path = _config(tmp_path, "[client]\ntimeout = 3.0\nask-timeout = 42.5\n")
    assert "ask_timeout" not in section_defaults(load_config(path), "client", {})
    parser = build_parser()
    argv = ["--config", str(path)]
    _apply_config(parser, [*argv, "ask", "hello"])
    assert parser.parse_args([*argv, "ask", "hello"]).ask_timeout == 42.5
    assert parser.parse_args([*argv, "chat"]).ask_timeout == 42.5
    assert parser.parse_args([*argv, "ask", "hello", "--timeout", "7"]).ask_timeout == 7.0  # the flag wins
    runs = parser.parse_args([*argv, "runs"])
    assert runs.timeout == 3.0 and not hasattr(runs, "ask_timeout")


def test_without_the_key_the_default_stands(tmp_path: Path) -> None:
    parser = build_parser()
    argv = ["--config", str(_config(tmp_path, "[client]\ntimeout = 3.0\n"))]
    _apply_config(parser, [*argv, "ask", "hello"])
    assert parser.parse_args([*argv, "ask", "hello"]).ask_timeout == ASK_TIMEOUT_S


def test_an_ask_timeout_that_is_no_number_is_refused_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="client.ask-timeout"):
        load_config(_config(tmp_path, '[client]\nask-timeout = "soon"\n'))
