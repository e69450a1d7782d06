"""``--config`` and ``--input-file`` naming something that is no file: a named pipe nothing
writes to, a terminal (``/dev/stdin`` in an interactive shell), a device, a folder. Each
waited for ever or read up to its bound; each is now refused at once, exit 2, naming the
flag, the file and what it is. A pipe a program writes to (``--config <(...)``, stdin piped)
and ``/dev/null`` are still read. Real ``ontoflow`` processes."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
WORKFLOW = REPO / "configs/examples/building_report/workflow.yaml"
NOWHERE = "ipc:///nonexistent/ontoflow-red21c.sock"


def _capped() -> None:
    # A read without a bound takes the memory it is given: 4 GiB, not the shared machine's.
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def _run(tmp: Path, *args: str, stdin: int | None = subprocess.DEVNULL, given: bytes | None = None) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["XDG_CONFIG_HOME"] = str(tmp / "xdg")
    env["ONTOFLOW_PIPE_WAIT_S"] = "0.3"  # a pipe nothing writes to is refused after 0.3 s, not 5
    done = subprocess.run([sys.executable, "-m", "ontoflow", *args], cwd=tmp, env=env, capture_output=True,
                          stdin=None if given is not None else stdin, input=given, timeout=60, preexec_fn=_capped)
    err = done.stderr.decode()
    assert "Traceback" not in err, err
    return done.returncode, err


def _both(name: str) -> list[list[str]]:
    return [["--config", name, "runs", "--connect", NOWHERE], ["run", str(WORKFLOW), "--input-file", name]]


@pytest.mark.parametrize("which", [0, 1])
def test_a_named_pipe_nothing_writes_to_is_refused_at_once(tmp_path: Path, which: int) -> None:
    os.mkfifo(tmp_path / "settings.fifo")
    code, err = _run(tmp_path, *_both("settings.fifo")[which])
    assert code == 2 and "settings.fifo: cannot read" in err and "is a pipe no program writes to" in err, err
    assert "within 0.3 s" in err, err  # ONTOFLOW_PIPE_WAIT_S


@pytest.mark.parametrize("which", [0, 1])
def test_stdin_on_a_terminal_is_refused_not_waited_on(tmp_path: Path, which: int) -> None:
    controller, terminal = os.openpty()
    try:
        code, err = _run(tmp_path, *_both("/dev/stdin")[which], stdin=terminal)
    finally:
        os.close(controller)
        os.close(terminal)
    assert code == 2 and "/dev/stdin: cannot read" in err and "is a device" in err, err


@pytest.mark.parametrize("which", [0, 1])
@pytest.mark.parametrize("name", ["/dev/zero", "/dev/urandom"])
def test_a_device_is_refused_without_reading_it(tmp_path: Path, which: int, name: str) -> None:
    code, err = _run(tmp_path, *_both(name)[which])
    assert code == 2 and f"{name}: cannot read" in err and "is a device" in err, err


def test_a_folder_as_input_file_says_so(tmp_path: Path) -> None:
    code, err = _run(tmp_path, "run", str(WORKFLOW), "--input-file", str(tmp_path))
    assert code == 2 and "is a folder, not a file" in err, err


def test_a_pipe_a_program_writes_to_is_still_read(tmp_path: Path) -> None:
    # `ontoflow --config <(...)` or `... | ontoflow --config /dev/stdin`: its settings apply
    # (the address it names answers nothing: exit 1 naming it, and its timeout bounds the wait).
    code, err = _run(tmp_path, "--config", "/dev/stdin", "runs",
                     given=f'[client]\nconnect = "{NOWHERE}"\ntimeout = 0.2\n'.encode())
    assert code == 1 and f"no answer from {NOWHERE} within 0.2 s" in err, err


def test_dev_null_as_config_sets_nothing_and_hides_the_local_file(tmp_path: Path) -> None:
    (tmp_path / "ontoflow.toml").write_text("[client]\nconect = 1\n")  # broken: read, it fails
    code, err = _run(tmp_path, "--config", "/dev/null", "runs", "--connect", NOWHERE, "--timeout", "0.2")
    assert code == 1 and f"no answer from {NOWHERE}" in err, err


@pytest.mark.parametrize("name", ["/dev/zero", "eval.fifo"])
def test_intents_eval_refuses_a_device_or_a_pipe_nothing_writes_to(tmp_path: Path, name: str) -> None:
    # Read whole and unbounded, /dev/zero ended in a MemoryError traceback (or the OOM killer);
    # a named pipe was waited on for ever.
    if name == "eval.fifo":
        os.mkfifo(tmp_path / name)
    code, err = _run(tmp_path, "intents", "eval", name, "--domains", str(REPO / "configs/examples/finance"))
    assert code == 2 and f"{name}: cannot read the file: is a" in err, err


@pytest.mark.parametrize("wait", ["soon", "nan"])
def test_a_pipe_wait_that_is_no_number_of_seconds_is_refused_naming_the_variable(tmp_path: Path, wait: str) -> None:
    os.mkfifo(tmp_path / "settings.fifo")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "xdg"), ONTOFLOW_PIPE_WAIT_S=wait)
    done = subprocess.run([sys.executable, "-m", "ontoflow", *_both("settings.fifo")[1]], cwd=tmp_path, env=env,
                          capture_output=True, stdin=subprocess.DEVNULL, timeout=60)
    err = done.stderr.decode()
    assert done.returncode == 2 and "ONTOFLOW_PIPE_WAIT_S must be a number of seconds from 0 to 3600" in err, err



def test_an_empty_pipe_wait_is_the_default_not_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """``ONTOFLOW_PIPE_WAIT_S=`` is a common way to unset a variable: it is the default wait."""
    from ontoflow.runtime.documents import PIPE_WRITER_WAIT_S, pipe_wait_s

    monkeypatch.setenv("ONTOFLOW_PIPE_WAIT_S", "")
    assert pipe_wait_s() == PIPE_WRITER_WAIT_S
    monkeypatch.setenv("ONTOFLOW_PIPE_WAIT_S", "0")
    assert pipe_wait_s() == 0
