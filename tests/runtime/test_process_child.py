"""Supervised OS processes: real ``python -c`` children."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import psutil
import pytest
from structlog.testing import capture_logs

from ontoflow.runtime.actor import ChildSpec, RestartPolicy, Supervisor, process_child
from ontoflow.runtime.errors import ChildProcessCrashed, RestartIntensityExceeded

pytestmark = pytest.mark.anyio


async def test_crashing_process_is_restarted_until_intensity_exceeded() -> None:
    child = process_child("crasher", [sys.executable, "-c", "raise SystemExit(1)"])
    sup = Supervisor([child], max_restarts=2, within_s=60.0, name="procs")
    with capture_logs() as logs:
        with pytest.raises(RestartIntensityExceeded):
            with anyio.fail_after(15):
                await sup.run()
    assert sup.statistics().restarts == {"crasher": 2}
    crashes = [e for e in logs if e["event"] == "actor_crashed"]
    assert [e["error"] for e in crashes] == ["ChildProcessCrashed"] * 3
    assert [e["returncode"] for e in logs if e["event"] == "process_crashed"] == [1, 1, 1]
    assert logs[-1]["event"] == "restart_intensity_exceeded"


async def test_transient_process_exiting_zero_is_not_restarted() -> None:
    child = process_child(
        "once", [sys.executable, "-c", "pass"], restart=RestartPolicy.TRANSIENT
    )
    sup = Supervisor([child])
    with capture_logs() as logs:
        async with anyio.create_task_group() as tg:
            await tg.start(sup.run)
            with anyio.fail_after(15):
                while not any(e["event"] == "child_exited" for e in logs):
                    await anyio.sleep(0.01)  # polling a condition under fail_after
            await anyio.wait_all_tasks_blocked()
            await sup.stop()
    assert sup.statistics().restarts == {"once": 0}
    assert [e["event"] for e in logs if e.get("child") == "once"] == [
        "process_started",
        "process_exited",
        "child_exited",
    ]


async def test_cancellation_terminates_a_sleeping_process(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    script = (
        "import pathlib, time, sys; "
        f"pathlib.Path({str(marker)!r}).write_text('x'); "
        "time.sleep(600)"
    )
    sup = Supervisor([process_child("sleeper", [sys.executable, "-c", script], stop_grace_s=5.0)])
    with capture_logs() as logs:
        async with anyio.create_task_group() as tg:
            await tg.start(sup.run)
            with anyio.fail_after(15):
                while not marker.exists():
                    await anyio.sleep(0.01)  # polling a condition under fail_after
            [pid] = [e["pid"] for e in logs if e["event"] == "process_started"]
            assert psutil.pid_exists(pid)
            await sup.stop()
    # Reaped, not a zombie: the pid no longer exists at all.
    assert not psutil.pid_exists(pid)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert any(e["event"] == "process_terminated" for e in logs)


async def test_process_ignoring_sigterm_is_killed_after_grace(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    script = (
        "import pathlib, signal, time; "
        "signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        f"pathlib.Path({str(marker)!r}).write_text('x'); "
        "time.sleep(600)"
    )
    spec = process_child("stubborn", [sys.executable, "-c", script], stop_grace_s=0.2)
    assert isinstance(spec, ChildSpec)
    with capture_logs() as logs:
        async with anyio.create_task_group() as tg:
            tg.start_soon(spec.start)
            with anyio.fail_after(15):
                while not marker.exists():
                    await anyio.sleep(0.01)  # polling a condition under fail_after
            tg.cancel_scope.cancel()
    [pid] = [e["pid"] for e in logs if e["event"] == "process_started"]
    assert not psutil.pid_exists(pid)
    assert any(e["event"] == "process_killed" for e in logs)


async def test_signal_death_is_a_crash() -> None:
    spec = process_child(
        "self-killer", [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), 9)"]
    )
    with pytest.raises(ChildProcessCrashed) as info:
        with anyio.fail_after(15):
            await spec.start()
    assert info.value.returncode == -9
    assert info.value.name == "self-killer"


async def test_env_is_added_to_the_inherited_environment() -> None:
    check = (
        "import os, sys; "
        "sys.exit(0 if os.environ.get('ONTOFLOW_TEST_X') == '1' and 'PATH' in os.environ else 3)"
    )
    spec = process_child("env", [sys.executable, "-c", check], env={"ONTOFLOW_TEST_X": "1"})
    with anyio.fail_after(15):
        await spec.start()  # exit 0: a normal return


def test_empty_argv_rejected() -> None:
    with pytest.raises(ValueError, match="argv"):
        process_child("empty", [])
