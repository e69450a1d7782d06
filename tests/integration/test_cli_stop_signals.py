"""``run``, ``plan run`` and the embedded ``ask`` stopped by SIGINT (Ctrl-C) or SIGTERM: the
steps done so far are printed, the exit code is 130 or 143, and no worker process is left
behind (before, SIGTERM killed the command at once and its worker processes ran on, for ever);
a signal after the run ended changes nothing. Real processes: the step that never ends tells
the test it started over a TCP socket, the late signal is sent by a capability's shutdown hook
as its worker stops after the run (``stop_capabilities``)."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import msgspec
import pytest

from tests.integration.stop_capabilities import LATE_SIGNAL, PORT
from tests.support.fake_openai import answer, open_fake_openai

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
CAPS = str(Path(__file__).with_name("stop_capabilities.py"))
FINANCE = REPO / "configs" / "examples" / "finance"
PYTHON = [sys.executable, "-m", "ontoflow"]
# ``ontoflow`` as a terminal starts it: a test runner's worker may ignore SIGINT, and a child
# keeps a signal its parent ignores (so does ``ontoflow``, as a background job of a script).
AS_ON_A_TERMINAL = [sys.executable, "-c", "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
                    "sys.argv[0] = 'ontoflow'; runpy.run_module('ontoflow', run_name='__main__')"]

WORKFLOW = """name: stopped
start: main
nodes:
  main:
    entry_block: q
    blocks:
      q:
        worker: t.quick
        transitions:
          - {on_signal: success, action: "JUMP:h"}
          - {on_signal: failure, action: RETURN}
      h:
        worker: t.hang
        transitions:
          - {on_signal: success, action: RETURN}
          - {on_signal: failure, action: RETURN}
"""
PLAN = "steps:\n  - {id: a, capability: t.quick}\n  - {id: b, capability: t.hang, depends_on: [a]}\n"
LATE_PLAN = "steps:\n  - {id: a, capability: t.quick}\n  - {id: c, capability: t.late, depends_on: [a]}\n"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env.update(extra)
    return env


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def _stopped_while_a_step_runs(folder: Path, args: list[str], signum: signal.Signals) -> tuple[int, str, str, int]:
    """Start ``ontoflow ARGS``, wait for the never-ending step to start, send ``signum``;
    return the exit code, stdout, stderr and the process id of the step's worker."""
    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listeners:
        listener = listeners.listeners[0]
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        process = await anyio.open_process([*AS_ON_A_TERMINAL, *args], cwd=folder, env=_env(**{PORT: str(port)}))
        out, err, worker_pid = b"", b"", 0
        try:
            with anyio.fail_after(90):  # within the test's own timeout: a left worker holding the pipes fails here
                async with anyio.create_task_group() as tg:

                    async def read_out() -> None:
                        nonlocal out
                        assert process.stdout is not None
                        async for chunk in process.stdout:
                            out += chunk

                    async def read_err() -> None:
                        nonlocal err
                        assert process.stderr is not None
                        async for chunk in process.stderr:
                            err += chunk

                    tg.start_soon(read_out)
                    tg.start_soon(read_err)
                    stream = await listener.accept()  # the step started
                    async with stream:
                        worker_pid = int((await stream.receive()).decode().strip())
                    process.send_signal(signum)
                code = await process.wait()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
            _reap(worker_pid)
    return code, out.decode(), err.decode(), worker_pid


@pytest.mark.parametrize(("verb", "file", "text"), [(["run"], "w.yaml", WORKFLOW), (["plan", "run"], "p.yaml", PLAN)])
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
async def test_a_stopped_run_prints_its_steps_so_far_exits_130_or_143_and_leaves_no_worker(
        tmp_path: Path, verb: list[str], file: str, text: str, signum: signal.Signals, code: int) -> None:
    (tmp_path / file).write_text(text)
    args = [*verb, file, "--no-builtins", "-c", CAPS, "--no-check"]
    exit_code, out, err, worker = await _stopped_while_a_step_runs(tmp_path, args, signum)
    assert exit_code == code, (out, err)
    assert "cancelled" in out and "t.x = 1" in out and "success" in out, out
    assert f"interrupted by {signum.name}" in err and "Traceback" not in err
    assert not _alive(worker)  # stopped with the command, never left running
    assert not [p for p in Path("/tmp").glob("ontoflow-work-*") if str(p) in out]


async def test_a_stopped_plan_run_with_json_prints_one_object_and_one_json_error(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(PLAN)
    args = ["plan", "run", "p.yaml", "--no-builtins", "-c", CAPS, "--no-check", "--json"]
    exit_code, out, err, worker = await _stopped_while_a_step_runs(tmp_path, args, signal.SIGTERM)
    assert exit_code == 143
    doc = msgspec.json.decode(out)
    assert doc["status"] == "cancelled" and [(t["step_id"], t["event"]) for t in doc["trace"]] == [
        ("a", "success"), ("b", "cancelled")]
    error = msgspec.json.decode(err.strip().splitlines()[-1])["error"]
    assert error["code"] == "interrupted" and "SIGTERM" in error["message"]
    assert not _alive(worker)


@pytest.mark.parametrize("late", ["SIGTERM", "SIGINT"])
async def test_a_signal_after_the_run_completed_changes_nothing(tmp_path: Path, late: str) -> None:
    (tmp_path / "p.yaml").write_text(LATE_PLAN)
    with anyio.fail_after(90):
        done = await anyio.run_process([*AS_ON_A_TERMINAL, "plan", "run", "p.yaml", "--no-builtins", "-c", CAPS, "--no-check"],
                                       cwd=tmp_path, env=_env(**{LATE_SIGNAL: late}), check=False)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, (out, err)
    assert "completed" in out and "t.z = 2" in out and "interrupted" not in err


async def test_an_embedded_ask_stopped_by_sigterm_stops_its_worker_processes(tmp_path: Path) -> None:
    asked = anyio.Event()

    async def never_ending() -> AsyncIterator[bytes]:
        asked.set()
        yield b'{"choices": ['
        await anyio.sleep_forever()

    async with open_fake_openai([answer(stream=never_ending)]) as model:
        env = _env(ONTOFLOW_LLM_URL=model.url, ONTOFLOW_LLM_MODEL="fake", XDG_STATE_HOME=str(tmp_path / "state"),
                   XDG_CONFIG_HOME=str(tmp_path / "xdg"))
        with anyio.fail_after(90):
            process = await anyio.open_process(
                [*AS_ON_A_TERMINAL, "ask", "qual o preço da Petrobras?", "--domains", str(FINANCE), "--intent-adapter", "llm"],
                cwd=tmp_path, env=env, stdout=None, stderr=None)
            async with process:
                await asked.wait()  # the cluster is up, its workers started, the model asked
                workers = _children(process.pid)
                assert workers
                process.send_signal(signal.SIGTERM)
                code = await process.wait()
    left = [pid for pid in workers if _alive(pid)]
    _reap(*left)
    assert code == 143 and not left


def _reap(*pids: int) -> None:
    """Kill what a failing test left running (a worker its command did not stop)."""
    for pid in pids:
        if pid and _alive(pid):
            os.kill(pid, signal.SIGKILL)


def _children(pid: int) -> list[int]:
    """The process ids whose parent is ``pid`` (Linux's /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found
