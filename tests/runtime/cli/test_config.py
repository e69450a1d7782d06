"""The configuration file: the shipped examples load, typos are errors, precedence holds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ontoflow.runtime.cli._config import Config, find_config, load_config, section_defaults
from ontoflow.runtime.cli._main import _apply_config, build_parser
from ontoflow.runtime.errors import ConfigError

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("name", ["daemon.toml", "worker.toml"])
def test_the_example_configurations_load(name: str) -> None:
    config = load_config(REPO / "configs" / name)
    assert config != Config()


def test_the_daemon_example_gives_the_daemon_and_the_clients_their_settings() -> None:
    config = load_config(REPO / "configs" / "daemon.toml")
    assert config.daemon.bind == config.client.connect == "tcp://127.0.0.1:7100"
    assert config.daemon.journal == str(REPO / "configs" / "runs.sqlite")  # from the file's folder


def test_the_worker_example_points_at_a_capability_file_that_exists() -> None:
    config = load_config(REPO / "configs" / "worker.toml")
    assert config.worker.capabilities is not None
    for spec in config.worker.capabilities:
        assert Path(spec).is_file(), spec


def _write(tmp_path: Path, text: str, name: str = "ontoflow.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_an_unknown_key_is_an_error_naming_the_key_and_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, '[daemon]\nbnd = "tcp://127.0.0.1:1"\n')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(path) in str(info.value) and "daemon.bnd" in str(info.value)


def test_an_unknown_section_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="clinet: unknown key"):
        load_config(_write(tmp_path, "[clinet]\n"))


def test_a_wrong_type_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"worker\.slots"):
        load_config(_write(tmp_path, '[worker]\nslots = "eight"\n'))


@pytest.mark.parametrize(("text", "said"), [
    ('[worker]\nslots = "eight"\n', "worker.slots: expected an integer, got a string"),
    ("[worker]\ngrace-s = true\n", "worker.grace-s: expected a number, got true or false"),
    ('[daemon]\ncapabilities = "mod"\n', "daemon.capabilities: expected an array, got a string"),
])
def test_a_wrong_type_is_said_in_toml_words(tmp_path: Path, text: str, said: str) -> None:
    # It read msgspec's "Expected `int | null`, got `str`" (null: a key left out, never written).
    with pytest.raises(ConfigError, match=re.escape(said)):
        load_config(_write(tmp_path, text))


def test_a_syntax_error_names_the_file_the_line_and_the_column(tmp_path: Path) -> None:
    path = _write(tmp_path, '[client]\nconnect = "tcp://x:1"\ntimeout = = 3\n')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(path) in str(info.value) and "line 3, column" in str(info.value)


def test_where_the_file_is_found(tmp_path: Path) -> None:
    here, xdg = tmp_path / "here", tmp_path / "xdg"
    here.mkdir()
    (xdg / "ontoflow").mkdir(parents=True)
    env = {"XDG_CONFIG_HOME": str(xdg)}
    assert find_config(None, cwd=here, environ=env) is None
    user = _write(xdg / "ontoflow", "", name="config.toml")
    assert find_config(None, cwd=here, environ=env) == user
    local = _write(here, "")
    assert find_config(None, cwd=here, environ=env) == local
    explicit = _write(tmp_path, "", name="other.toml")
    assert find_config(str(explicit), cwd=here, environ=env) == explicit
    with pytest.raises(ConfigError, match="no such file"):
        find_config(str(tmp_path / "missing.toml"), cwd=here, environ=env)
    with pytest.raises(ConfigError, match="is a folder, not a file"):  # was "no such file"
        find_config(str(tmp_path), cwd=here, environ=env)


def test_the_environment_wins_over_the_file_for_the_client(tmp_path: Path) -> None:
    config = load_config(_write(tmp_path, '[client]\nconnect = "tcp://file:1"\ntimeout = 3.0\n'))
    assert section_defaults(config, "client", {}) == {"connect": "tcp://file:1", "timeout": 3.0}
    env = {"ONTOFLOW_CONNECT": "tcp://env:1", "ONTOFLOW_CURVE_SECRET": "c.key_secret", "ONTOFLOW_CURVE_SERVER_KEY": "d.key"}
    assert section_defaults(config, "client", env) == {
        "connect": "tcp://env:1", "timeout": 3.0, "curve_secret": "c.key_secret", "curve_server_key": "d.key",
    }
    assert section_defaults(config, "worker", env) == {}  # a worker's keys are its own


def test_flags_beat_the_environment_which_beats_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, '[client]\nconnect = "tcp://file:1"\ntimeout = 3.0\n[worker]\nslots = 3\ncapabilities = ["m1"]\n')
    monkeypatch.delenv("ONTOFLOW_CONNECT", raising=False)

    def parse(*argv: str):
        parser = build_parser()
        _apply_config(parser, argv)
        return parser.parse_args(argv)

    args = parse("--config", str(path), "status", "r1")
    assert (args.connect, args.timeout) == ("tcp://file:1", 3.0)
    monkeypatch.setenv("ONTOFLOW_CONNECT", "tcp://env:1")
    assert parse("status", "r1", "--config", str(path)).connect == "tcp://env:1"
    assert parse("--config", str(path), "status", "r1", "--connect", "tcp://flag:1").connect == "tcp://flag:1"
    worker = parse("--config", str(path), "worker", "-c", "m2")
    assert worker.slots == 3 and worker.capabilities == ["m1", "m2"]
    assert parse("--config", str(path), "worker", "--slots", "5").slots == 5
    assert parse("--config", str(path), "run", "m.yaml").slots == 8  # run reads no section


def test_the_daemon_capabilities_come_from_the_file_relative_to_its_folder(tmp_path: Path) -> None:
    config = load_config(_write(tmp_path, '[daemon]\ncapabilities = ["caps/quote.py", "mypkg.caps"]\n'))
    assert config.daemon.capabilities == [str(tmp_path / "caps" / "quote.py"), "mypkg.caps"]


def test_the_workers_connections_file_comes_from_its_section_relative_to_the_config(tmp_path: Path) -> None:
    path = _write(tmp_path, '[worker]\nconnections = "secrets/connections.toml"\n')
    assert load_config(path).worker.connections == str(tmp_path / "secrets" / "connections.toml")
    parser = build_parser()
    argv = ("--config", str(path), "worker")
    _apply_config(parser, argv)
    assert parser.parse_args(argv).connections == str(tmp_path / "secrets" / "connections.toml")


def test_a_config_given_through_a_pipe_is_read(tmp_path: Path) -> None:
    # `ontoflow --config <(...)` names a pipe, which is no regular file: it was "no such file".
    import os

    fifo = tmp_path / "config.fifo"
    os.mkfifo(fifo)
    assert find_config(str(fifo)) == fifo
    assert find_config(os.devnull) == Path(os.devnull)
    assert load_config(Path(os.devnull)) == Config()


def test_a_bad_value_deep_in_the_file_is_named_by_its_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"daemon\.max-runs: an integer past 64 bits"):
        load_config(_write(tmp_path, "[daemon]\nmax-runs = 18446744073709551616\n"))


def test_the_readme_names_every_verb_that_reads_the_client_section() -> None:
    # A user reads there which verbs [client] and ONTOFLOW_CONNECT serve.
    import re

    text = (REPO / "README.md").read_text(encoding="utf-8")
    listed = re.search(r"`\[client\]` \(the client verbs:\s*([^)]*)\)", text)
    assert listed is not None
    named = {v.strip() for v in listed[1].replace("\n", " ").split(",")}
    reading = {name for name, verb in build_parser().verbs.items() if verb.get_default("config_section") == "client"}
    assert named == reading


def test_a_broken_config_file_stops_only_the_verbs_that_read_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    # A typo in ./ontoflow.toml (or the user's config) must not take away --version, --help or
    # the completion script a shell sources at start-up: only a verb that reads the file fails.
    from ontoflow.runtime.cli import main

    _write(tmp_path, '[client]\nconect = "tcp://x:1"\n')
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as version:
        main(["--version"])
    assert version.value.code == 0 and capsys.readouterr().out.startswith("ontoflow ")
    assert main(["completion", "bash"]) == 0 and "ontoflow" in capsys.readouterr().out
    assert main(["runs"]) == 2
    assert "client.conect: unknown key" in capsys.readouterr().err
