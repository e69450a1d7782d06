"""Every number of ``daemon`` and ``worker`` in its range, as a flag and as the configuration
file's key (``_bounds``): refused with exit 2, naming the flag (or the key and the file) and
the range, never a traceback. Before, ``--max-message-bytes 1`` started a daemon that could
never welcome a worker (its first Ready is bigger) and a worker that could never be welcomed;
``--retention-s 1e300`` and ``worker --grace-s 1e300`` stopped with a traceback; ``--liveness
0`` in the file was taken and the flag's check was the only one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ontoflow.runtime.cli import main
from ontoflow.runtime.cli._bounds import BOUNDS, MIN_MESSAGE_BYTES

FLOOR = f"at least {MIN_MESSAGE_BYTES:,}"


def _ontoflow(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    # A started daemon or worker would serve for good: the timeout is the failure before the fix.
    return subprocess.run([sys.executable, "-m", "ontoflow", *argv], cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60, check=False)


def _code(argv: list[str]) -> int:
    """``main``'s exit code (a usage error leaves it as SystemExit, as it leaves the process)."""
    try:
        return main(argv)
    except SystemExit as done:
        return int(done.code or 0)


def _where(verb: str, tmp_path: Path) -> list[str]:
    return ["--bind" if verb == "daemon" else "--connect", f"ipc://{tmp_path}/d.sock"]


@pytest.mark.parametrize("verb", ["daemon", "worker"])
def test_a_message_limit_below_the_floor_is_refused_as_a_flag(tmp_path: Path, verb: str) -> None:
    done = _ontoflow(tmp_path, verb, *_where(verb, tmp_path), "--max-message-bytes", "1")
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"argument --max-message-bytes: must be a whole number of {FLOOR}" in done.stderr
    assert "Traceback" not in done.stderr and not done.stdout


@pytest.mark.parametrize("verb", ["daemon", "worker"])
def test_a_message_limit_below_the_floor_is_refused_as_a_config_key(tmp_path: Path, verb: str) -> None:
    config = tmp_path / "o.toml"
    config.write_text(f"[{verb}]\nmax-message-bytes = {MIN_MESSAGE_BYTES - 1}\n")
    done = _ontoflow(tmp_path, "--config", str(config), verb, *_where(verb, tmp_path))
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"config file {config}: {verb}.max-message-bytes: must be a whole number of {FLOOR}" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_floor_itself_is_taken(tmp_path: Path) -> None:
    # The smallest limit the integration tests run a daemon and workers with (64 KiB).
    config = tmp_path / "o.toml"
    config.write_text(f"[daemon]\nmax-message-bytes = {MIN_MESSAGE_BYTES}\n")
    assert main(["--config", str(config), "daemon", "--bind", "ipc:///nonexistent-folder/d.sock", "--heartbeat-ms",
                 "1000"]) == 1  # past the bounds: it failed to bind the folder that is not there


def test_a_string_where_a_number_belongs_names_the_key_and_the_file(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "o.toml"
    config.write_text('[daemon]\nheartbeat-ms = "fast"\n')
    assert main(["--config", str(config), "daemon", "--bind", f"ipc://{tmp_path}/d.sock"]) == 2
    err = capsys.readouterr().err
    assert f"config file {config}: daemon.heartbeat-ms: expected an integer, got a string" in err and "Traceback" not in err


#: A value out of each setting's range (its kind's nonsense: 0, a negative, NaN, too large).
NONSENSE = {
    "heartbeat_ms": ["0", "-5", "86400001"], "liveness": ["0", "1001"], "schedule_to_start_ms": ["-1"],
    "answer_timeout_ms": ["0"], "max_message_bytes": ["0", "65535"], "max_runs": ["0"], "max_value_bytes": ["0"],
    "grace_s": ["nan", "-1", "1e300"], "retention_s": ["0", "inf", "1e300"], "prune_every_s": ["0", "nan"],
    "slots": ["0", "10001"], "nice": ["-1", "20"], "spin_us": ["-1", "1000001"], "reconnect_max": ["0.5", "nan"],
    "cancel_grace_s": ["-1", "inf"], "init_timeout_s": ["0", "nan", "1e300"], "http_timeout_s": ["0", "inf"],
    "http_health_interval_s": ["0", "nan"],
    "http_max_connections": ["0", "65537"], "http_max_connections_per_client": ["0", "-3"],
    "max_stall_s": ["0", "inf", "86401"],
}
CASES = [(verb, dest, value) for verb, bounds in BOUNDS.items() for dest in bounds for value in NONSENSE[dest]]


@pytest.mark.parametrize(("verb", "dest", "value"), CASES, ids=[f"{v}-{d}-{x}" for v, d, x in CASES])
def test_every_number_out_of_its_range_is_refused_as_flag_and_as_key(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], verb: str, dest: str, value: str) -> None:
    flag = "--" + dest.replace("_", "-")
    assert _code([verb, *_where(verb, tmp_path), flag, value]) == 2
    err = capsys.readouterr().err
    assert f"{verb}: argument {flag}: must be a " in err, err
    config = tmp_path / "o.toml"
    config.write_text(f"[{verb}]\n{dest.replace('_', '-')} = {value}\n")
    assert _code(["--config", str(config), verb, *_where(verb, tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"config file {config}: {verb}.{dest.replace('_', '-')}: must be a " in err, err
