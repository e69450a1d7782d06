"""What users of other CLIs expect of ``ontoflow``: real ``python -m ontoflow`` processes.

--version, shell completion, JSON errors, a closed pipe, --input-file, --log-file (the worker
processes' lines too, a missing folder), syntax errors with line and column, the config file
and the client's environment variables, and the progress line on a terminal.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import shutil
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import msgspec
import pytest

from tests.integration._cli import Ran, run_ontoflow

MANIFEST = "configs/examples/building_report/workflow.yaml"


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    """This process's environment without ONTOFLOW_* and with a config home of our own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["XDG_CONFIG_HOME"] = str(tmp / "xdg")
    env.update(extra)
    return env


@pytest.fixture
def cli(workdir: Path):
    def run(*args: str, timeout: float = 60, **env: str) -> Ran:
        return run_ontoflow(workdir, *args, env=_env(workdir, **env), timeout=timeout)

    return run


def _json_error(ran: Ran) -> dict:
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1, ran.stderr  # one object, nothing else
    return msgspec.json.decode(lines[0])["error"]


def test_version(cli) -> None:
    ran = cli("--version")
    assert ran.code == 0 and ran.stdout.startswith("ontoflow ") and ran.stdout.split()[1][0].isdigit()


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_completion_scripts_are_valid_and_know_the_verbs_and_flags(cli, shell: str, tmp_path: Path) -> None:
    ran = cli("completion", shell)
    assert ran.code == 0, ran.stderr
    for word in ("submit", "pipeline", "--input-file", "--connect", "--curve-server-key"):
        assert word in ran.stdout
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed: the script's syntax is not checked")
    script = tmp_path / f"ontoflow.{shell}"
    script.write_text(ran.stdout)
    check = subprocess.run([shell, "-n", str(script)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    if shell == "bash":  # complete for real, as bash does on Tab
        probe = (
            f"source {script}; "
            "COMP_WORDS=(ontoflow sub); COMP_CWORD=1; _shtab_ontoflow ontoflow sub ontoflow; echo \"${COMPREPLY[@]}\"; "
            "COMP_WORDS=(ontoflow submit --cu); COMP_CWORD=2; _shtab_ontoflow ontoflow --cu submit; echo \"${COMPREPLY[@]}\""
        )
        done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True)
        assert done.stdout.splitlines() == ["submit", "--curve-secret --curve-server-key"], done.stderr


def test_a_closed_stdout_ends_quietly_with_141(workdir: Path) -> None:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line is written (`| head` that ended)
    try:
        proc = subprocess.run([sys.executable, "-m", "ontoflow", "completion", "bash"], cwd=workdir, stdout=write,
                              stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=_env(workdir), timeout=60)
    finally:
        os.close(write)
    assert proc.returncode == 141 and proc.stderr == b""


def test_errors_with_json_are_one_json_object_and_keep_their_exit_code(cli) -> None:
    missing = cli("run", "does/not/exist.yaml", "--json")
    assert missing.code == 2 and missing.stdout == ""
    error = _json_error(missing)
    assert error["code"] == "invalid" and "cannot read" in error["message"] and "does/not/exist.yaml" in error["message"]

    usage = cli("run", MANIFEST, "--json", "--workers", "many")
    assert usage.code == 2 and _json_error(usage)["code"] == "usage" and "--workers" in _json_error(usage)["message"]

    no_answer = cli("status", "r1", "--json", "--timeout", "0.2", ONTOFLOW_CONNECT="ipc:///nonexistent/ontoflow.sock")
    assert no_answer.code == 1 and no_answer.stdout == ""
    assert _json_error(no_answer)["code"] == "no_answer"

    text = cli("run", "does/not/exist.yaml")
    assert text.code == 2 and text.stderr.startswith("ontoflow: ") and "cannot read" in text.stderr


def test_a_yaml_syntax_error_names_the_file_line_and_column(cli, workdir: Path) -> None:
    (workdir / "broken.yaml").write_text("start: main\nnodes:\n  main: {entry_block: a\n")
    ran = cli("run", "broken.yaml")
    assert ran.code == 2 and "Traceback" not in ran.stderr
    assert "broken.yaml" in ran.stderr and "not valid YAML at line 4, column 1" in ran.stderr


def test_input_file_with_input_winning(cli, workdir: Path) -> None:
    (workdir / "in.yaml").write_text("obdc.base.lang.code: pt_BR\n")
    (workdir / "in.json").write_text('{"obdc.base.lang.code": "pt_BR"}')
    from_file = cli("run", MANIFEST, "--input-file", "in.yaml", "--json", "--transport", "inproc")
    assert from_file.code == 0, from_file.stderr
    assert from_file.json()["context"]["obdc.base.lang.code"] == "pt_BR"
    both = cli("run", MANIFEST, "--input-file", "in.json", "--input", "obdc.base.lang.code=en", "--json", "--transport", "inproc")
    assert both.code == 0, both.stderr
    assert both.json()["context"]["obdc.base.lang.code"] == "en"
    (workdir / "bad.json").write_text('{"obdc.base.lang.code": "klingon"}')
    bad = cli("run", MANIFEST, "--input-file", "bad.json")
    assert bad.code == 2 and "obdc.base.lang.code" in bad.stderr and "klingon" not in bad.stderr


def test_log_file_gets_the_worker_processes_lines_too(cli, workdir: Path) -> None:
    (workdir / "logs").mkdir()
    ran = cli("run", MANIFEST, "--log-level", "info", "--log-file", "logs/run.log")
    assert ran.code == 0, ran.stderr
    lines = [msgspec.json.decode(line) for line in (workdir / "logs" / "run.log").read_text().splitlines()]
    events = {(line["event"], line.get("worker_id")) for line in lines}
    assert ("worker_started", "local-0") in events  # written by the worker process
    assert any(event == "run_submitted" for event, _ in events)  # and by the orchestrator


def test_log_file_in_a_missing_folder_exits_2(cli) -> None:
    ran = cli("run", MANIFEST, "--log-file", "no/such/folder/run.log")
    assert ran.code == 2 and "Traceback" not in ran.stderr
    assert "cannot open the log file" in ran.stderr and "no/such/folder/run.log" in ran.stderr


def test_client_settings_flags_over_environment_over_config_file(cli, workdir: Path) -> None:
    def used(ran: Ran) -> str:
        assert ran.code == 1, ran.stderr
        return ran.stderr.split("no answer from ")[1].split(" ")[0]

    nothing = cli("status", "r1")
    assert nothing.code == 2 and "ONTOFLOW_CONNECT" in nothing.stderr and "--connect" in nothing.stderr
    (workdir / "ontoflow.toml").write_text('[client]\nconnect = "ipc:///nonexistent/file.sock"\ntimeout = 0.2\n')
    assert used(cli("status", "r1")) == "ipc:///nonexistent/file.sock"
    assert used(cli("status", "r1", ONTOFLOW_CONNECT="ipc:///nonexistent/env.sock")) == "ipc:///nonexistent/env.sock"
    flag = cli("status", "r1", "--connect", "ipc:///nonexistent/flag.sock", ONTOFLOW_CONNECT="ipc:///nonexistent/env.sock")
    assert used(flag) == "ipc:///nonexistent/flag.sock"


def test_the_user_config_file_is_read_when_there_is_no_local_one(cli, workdir: Path) -> None:
    user = workdir / "xdg" / "ontoflow" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[client]\nconnect = "ipc:///nonexistent/user.sock"\ntimeout = 0.2\n')
    ran = cli("workers")
    assert ran.code == 1 and "ipc:///nonexistent/user.sock" in ran.stderr


def test_a_typo_in_the_config_file_exits_2_naming_the_key_and_the_file(cli, workdir: Path) -> None:
    (workdir / "mine.toml").write_text('[client]\nconect = "tcp://127.0.0.1:7100"\n')
    ran = cli("--config", "mine.toml", "runs")
    assert ran.code == 2 and "Traceback" not in ran.stderr
    assert "mine.toml" in ran.stderr and "client.conect" in ran.stderr
    missing = cli("runs", "--config", "nope.toml")
    assert missing.code == 2 and "nope.toml" in missing.stderr


GATE = '''
import os

import anyio

from ontoflow import Capability, CapabilityMetadata


class Gate(Capability):
    """Ends when the test writes to the FIFO named by GATE_FIFO: a run as long as the test wants."""

    metadata = CapabilityMetadata(id="test.gate", outputs=["test.opened"], timeout_ms=None)

    async def execute(self, inputs, context):
        def read():
            with open(os.environ["GATE_FIFO"]) as fifo:
                return fifo.read().strip()

        return {"test.opened": await anyio.to_thread.run_sync(read)}
'''


def _read_until(fd: int, needle: bytes, deadline_s: float) -> bytes:
    """Read a pty until ``needle`` shows; fails past the deadline (a bound, not a wait)."""
    seen = b""
    end = time.monotonic() + deadline_s
    while needle not in seen:
        left = end - time.monotonic()
        assert left > 0, f"{needle!r} never shown; got {seen[-500:]!r}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                seen += os.read(fd, 4096)
            except OSError:  # the other side closed
                break
    return seen


def test_progress_is_shown_on_a_terminal_while_the_run_is_long(workdir: Path) -> None:
    (workdir / "gate.py").write_text(GATE)
    (workdir / "gate.yaml").write_text("start: m\nnodes:\n  m:\n    entry_block: g\n    blocks:\n      g: {worker: test.gate}\n")
    fifo = workdir / "gate.fifo"
    os.mkfifo(fifo)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    env = _env(workdir, GATE_FIFO=str(fifo), TERM="xterm")
    proc = subprocess.Popen(
        [sys.executable, "-m", "ontoflow", "run", "gate.yaml", "-c", "gate.py", "--no-builtins", "--json"],
        cwd=workdir, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL, env=env,
    )
    os.close(slave)
    try:
        shown = _read_until(master, b"test.gate", deadline_s=60)
        assert b"running s1" in shown and b"0 steps done" in shown
        with open(fifo, "w") as gate:  # the step ends
            gate.write("open\n")
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    assert proc.returncode == 0
    doc = msgspec.json.decode(out)
    assert doc["status"] == "completed" and doc["context"]["test.opened"] == "open"


@pytest.mark.parametrize(("verb", "needs"), [("worker", "--connect"), ("daemon", "--bind")])
def test_an_address_from_nowhere_is_a_clear_error(cli, verb: str, needs: str) -> None:
    ran = cli(verb)
    assert ran.code == 2 and needs in ran.stderr and f"[{verb}]" in ran.stderr and "Traceback" not in ran.stderr
