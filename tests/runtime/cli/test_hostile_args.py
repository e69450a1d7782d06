"""``ontoflow`` given what an outside tester types: odd config flags, control characters, huge
arguments, a stdout that cannot take the answer, closed standard descriptors. Real
``python -m ontoflow`` processes; no daemon (its address names nothing, so a client verb ends
at once with "no answer"). Never a traceback, always a non-zero exit and a message that
names the problem without replaying the input raw."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

NOWHERE = "ipc:///nonexistent/ontoflow-cli11.sock"


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["XDG_CONFIG_HOME"] = str(tmp / "xdg")
    env.update(extra)
    return env


def _run(tmp: Path, *args: str, env: dict[str, str] | None = None, **kw) -> subprocess.CompletedProcess[bytes]:
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    kw.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run([sys.executable, "-m", "ontoflow", *args], cwd=tmp, env=env or _env(tmp), timeout=60, **kw)


def _clean(done: subprocess.CompletedProcess[bytes]) -> str:
    """stderr as text, after checking it holds no traceback and no raw control character."""
    err = done.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err
    assert not any(c in err for c in "\x1b\x07\x00\r"), err
    return err


def test_an_abbreviated_config_flag_reads_the_file(tmp_path: Path) -> None:
    # argparse took `--conf FILE` as --config, but the pre-parser did not: the file was unread.
    (tmp_path / "mine.toml").write_text(f'[client]\nconnect = "{NOWHERE}"\ntimeout = 0.2\n')
    for argv in (["--conf", "mine.toml", "runs"], ["runs", "--conf", "mine.toml"]):
        done = _run(tmp_path, *argv)
        assert done.returncode == 1 and f"no answer from {NOWHERE}" in _clean(done), done.stderr


@pytest.mark.parametrize("argv", [["--config"], ["runs", "--json", "--config"]])
def test_a_config_flag_without_its_value_is_a_usage_error_in_the_house_format(tmp_path: Path, argv: list[str]) -> None:
    done = _run(tmp_path, *argv)
    err = _clean(done)
    assert done.returncode == 2 and done.stdout == b""
    if "--json" in argv:  # one JSON object, not argparse's own "usage: ... error:" lines
        assert len(err.splitlines()) == 1 and msgspec.json.decode(err)["error"]["code"] == "usage"
    else:
        assert "ontoflow: argument --config: expected one argument" in err and "error:" not in err


def test_an_empty_config_or_input_file_name_is_refused(tmp_path: Path) -> None:
    config = _run(tmp_path, "--config", "", "runs")
    assert config.returncode == 2 and "--config: the file name is empty" in _clean(config)
    # An empty --input-file was silently no file: the run went on without the inputs meant.
    manifest = tmp_path / "m.yaml"
    manifest.write_text("start: m\nnodes:\n  m:\n    entry_block: a\n    blocks:\n      a: {worker: x.y}\n")
    inputs = _run(tmp_path, "submit", "m.yaml", "--input-file", "", "--connect", NOWHERE, "--timeout", "0.2")
    assert inputs.returncode == 2 and "--input-file: the file name is empty" in _clean(inputs)


def test_a_config_path_too_long_to_look_at_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    long = "/tmp/" + "a" * 5000
    done = _run(tmp_path, "runs", "--config", f"{long}/x.toml")
    assert done.returncode == 2 and "--config" in _clean(done) and len(done.stderr) < 2000
    env = _env(tmp_path, XDG_CONFIG_HOME=long)
    assert _run(tmp_path, "--version", env=env).returncode == 0  # --version reads no file
    runs = _run(tmp_path, "runs", env=env)
    assert runs.returncode == 2 and "$XDG_CONFIG_HOME" in _clean(runs) and "File name too long" in runs.stderr.decode()


def test_control_characters_are_never_echoed_raw(tmp_path: Path) -> None:
    address = _run(tmp_path, "runs", "--connect", "tcp://a\x1b[2J:1")
    assert address.returncode == 2 and "\\x1b[2J" in _clean(address)  # refused before ZeroMQ saw it
    path = _run(tmp_path, "run", "no\x1b]0;pwned\x07such.yaml")
    assert path.returncode == 2 and "no\\x1b]0;pwned\\x07such.yaml" in _clean(path)


def test_a_huge_argument_is_cut_in_the_error(tmp_path: Path) -> None:
    done = _run(tmp_path, "run", "A" * 100_000 + ".yaml")
    err = _clean(done)
    assert done.returncode == 2 and len(err) < 2000 and "characters)" in err


@pytest.mark.parametrize("argv", [["graph", "m.yaml", "--no-builtins"], ["check", "m.yaml", "--no-builtins", "--json"]])
def test_a_stdout_that_cannot_take_the_answer_is_an_error_not_a_traceback(tmp_path: Path, argv: list[str]) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    (tmp_path / "m.yaml").write_text("start: m\nnodes:\n  m:\n    entry_block: a\n    blocks:\n      a: {worker: x.y}\n")
    with open("/dev/full", "wb") as full:
        done = _run(tmp_path, *argv, stdout=full)
    err = _clean(done)
    assert done.returncode == 1 and len(err.splitlines()) == 1, err
    message = msgspec.json.decode(err)["error"]["message"] if "--json" in argv else err
    assert "cannot write the answer to stdout: No space left on device" in message


def test_closed_standard_descriptors_neither_abort_nor_move_errors_to_stdout(tmp_path: Path) -> None:
    # stdin and stdout closed: the client's socket took fd 0 or 1 and the event loop aborted
    # the process (SIGABRT) closing it.
    done = _run(tmp_path, "runs", "--connect", NOWHERE, "--timeout", "0.2", stdout=None, stdin=None,
                preexec_fn=lambda: (os.close(0), os.close(1)))
    assert done.returncode == 1 and "no answer from" in _clean(done)
    # stderr closed: print(file=None) wrote the error on stdout, and the exit code was 1.
    quiet = _run(tmp_path, "runs", "--limit", "0", "--connect", NOWHERE, stderr=None, preexec_fn=lambda: os.close(2))
    assert quiet.returncode == 2 and quiet.stdout == b""


@pytest.mark.parametrize(("name", "body", "where"), [
    ("ctl.yaml", b'a.b: 1\nc.d: "x\x01"\n', "not valid YAML at line 2, column 8"),
    ("nul.yaml", b"a.b: 1\nc.d: x\x00y\n", "not valid YAML at line 2, column 7: a NUL character"),
    ("latin1.yaml", b'a.b: 1\nc.d: "\xa1"\n', "not valid YAML at line 2, column 7: not UTF-8"),
    ("open.toml", b'a.b = 1\nc.d = [\n', "not valid TOML at line 3, column 1"),
])
def test_an_input_file_syntax_error_names_the_line_and_column(tmp_path: Path, name: str, body: bytes, where: str) -> None:
    # PyYAML's reader errors said "position 8" on a second line; tomllib's "at end of document".
    (tmp_path / name).write_bytes(body)
    (tmp_path / "m.yaml").write_text("start: m\nnodes:\n  m:\n    entry_block: a\n    blocks:\n      a: {worker: x.y}\n")
    done = _run(tmp_path, "submit", "m.yaml", "--input-file", name, "--connect", NOWHERE)
    err = _clean(done)
    assert done.returncode == 2 and f"--input-file {name}: {where}" in err and len(err.splitlines()) == 1


def test_a_config_file_past_a_mebibyte_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    # Read up to a document's 64 MiB bound, a 30 MB file that was no configuration took 14 s
    # and 650 MB of memory to be refused; /dev/zero, 64 MiB of reading.
    from ontoflow.runtime.cli._config import MAX_CONFIG_BYTES, load_config
    from ontoflow.runtime.errors import ConfigError

    big = tmp_path / "big.toml"
    big.write_bytes(b"[client]\n" + b"# a comment line\n" * (MAX_CONFIG_BYTES // 17 + 1))
    for path in (big,):  # /dev/zero: refused as a device before it is read (test_settings_not_files)
        with pytest.raises(ConfigError, match="larger than 1 MiB, the most a configuration file may be"):
            load_config(path)
    fits = tmp_path / "fits.toml"
    fits.write_bytes(b"[client]\ntimeout = 2.0\n" + b"#" * (MAX_CONFIG_BYTES - 40) + b"\n")
    assert load_config(fits).client.timeout == 2.0


def test_a_curve_key_from_the_environment_is_named_when_it_fails_and_its_contents_never_shown(tmp_path: Path) -> None:
    missing = _run(tmp_path, "runs", env=_env(tmp_path, ONTOFLOW_CONNECT=NOWHERE, ONTOFLOW_CURVE_SECRET="gone.key_secret",
                                               ONTOFLOW_CURVE_SERVER_KEY="gone.key"))
    err = _clean(missing)
    assert missing.returncode == 2 and "cannot read key file gone.key_secret" in err
    assert "from the environment: ONTOFLOW_CURVE_SECRET=gone.key_secret" in err  # it said only the file before
    secret = "Qx7!" + "S" * 36
    (tmp_path / "bad.key_secret").write_text(f'curve\n    public-key = "{secret}"\n    secret-key = "{secret}"\n')
    garbage = _run(tmp_path, "runs", env=_env(tmp_path, ONTOFLOW_CONNECT=NOWHERE, ONTOFLOW_CURVE_SECRET="bad.key_secret",
                                               ONTOFLOW_CURVE_SERVER_KEY="bad.key_secret"))
    assert garbage.returncode == 2 and "bad.key_secret" in _clean(garbage) and secret not in garbage.stderr.decode()
    (tmp_path / "m.yaml").write_text("start: m\nnodes:\n  m:\n    entry_block: a\n    blocks:\n      a: {worker: x.y}\n")
    text = (tmp_path / "bad.key_secret").read_text()
    for name in ("s.yaml", "s.toml", "s.json"):
        (tmp_path / name).write_text(text)
    for flags in (["--config", "s.toml"], *(["--input-file", name] for name in ("s.yaml", "s.toml", "s.json"))):
        done = _run(tmp_path, "submit", "m.yaml", *flags, "--connect", NOWHERE)  # a secret given where a document goes
        err = _clean(done)
        assert done.returncode == 2 and flags[1] in err and "SSSS" not in err, err


def test_a_folder_where_a_file_goes_is_a_setting_error_exit_2(tmp_path: Path) -> None:
    # `daemon --journal FOLDER` exited 3, the code of a corrupt journal ("never touch it").
    (tmp_path / "logs").mkdir()
    journal = _run(tmp_path, "daemon", "--bind", f"ipc://{tmp_path}/d.sock", "--journal", "logs")
    assert journal.returncode == 2 and "--journal logs: is a folder" in _clean(journal)
    log = _run(tmp_path, "runs", "--connect", NOWHERE, "--log-file", "logs")
    assert log.returncode == 2 and "cannot open the log file logs" in _clean(log)
