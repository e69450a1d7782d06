"""A supervised OS process: a child spec whose ``start`` runs one real process to its end.

A child that cannot start for good (a capability's constructor raises: a restart runs the same
code and fails the same way) says so before it exits: ``report_cannot_start`` writes its
reason in a file its parent named in ``ONTOFLOW_CANNOT_START_FILE`` (Kubernetes' termination
message file, read the same way), and its exit is ``ChildCannotStart``, which a supervisor
does not restart. Before, ``ontoflow run`` started such a worker four times, each printing the
same error, before its supervisor gave up with an error of its own.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence

import anyio
import structlog
from anyio.abc import Process

from ontoflow.runtime.actor._supervisor import ChildSpec, RestartPolicy
from ontoflow.runtime.errors import ChildCannotStart, ChildProcessCrashed

__all__ = ["CANNOT_START_ENV", "SUPERVISOR_ENV", "process_child", "report_cannot_start", "supervising_parent"]

log = structlog.get_logger()

#: The variable naming the file a child writes why it cannot start in (``report_cannot_start``).
CANNOT_START_ENV = "ONTOFLOW_CANNOT_START_FILE"

#: The variable naming the process that supervises a child (its pid): a worker whose parent is no
#: longer that one (killed, its children reparented) stops as on SIGTERM (``supervising_parent``).
SUPERVISOR_ENV = "ONTOFLOW_SUPERVISOR_PID"

#: The most of a child's reason that is read (it is one line for a person).
_REASON_BYTES = 4096


def report_cannot_start(reason: str) -> bool:
    """Tell a supervising parent that this process cannot start for good, with ``reason``
    (already scrubbed: the parent prints it as it is); the process then exits non-zero.

    The variable is removed from this process's environment at the first call, so a process
    it starts does not inherit it.

    Returns:
        True when a parent asked for it (``CANNOT_START_ENV``) and it was written: the parent
        prints the reason; False otherwise (the caller prints it itself).
    """
    path = os.environ.pop(CANNOT_START_ENV, None)
    if not path:
        return False
    try:
        with open(path, "w", encoding="utf-8") as file:
            file.write(reason[:_REASON_BYTES])
    except OSError:
        return False
    return True


def supervising_parent() -> int | None:
    """The pid of the process supervising this one (``SUPERVISOR_ENV``, set by ``process_child``),
    or None. The variable is removed at the first call, so a process this one starts does not
    take this one's parent for its own."""
    value = os.environ.pop(SUPERVISOR_ENV, "")
    return int(value) if value.isdigit() else None


def process_child(
    name: str,
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    restart: RestartPolicy = RestartPolicy.PERMANENT,
    stop_grace_s: float = 5.0,
    came_up: Callable[[], bool] | None = None,
) -> ChildSpec:
    """Return a child spec that runs ``argv`` as an OS process (e.g. a local worker host).

    Each start spawns the process with stdin on ``/dev/null``, its stdout on our stderr
    (stdout belongs to the command's own answer; a capability's ``print`` was lost on
    ``/dev/null``) and stderr inherited (so its JSON log lines reach ours). A zero
    exit is a normal return; a non-zero exit or death by a signal is a crash. When the child
    is cancelled (the supervisor stops), the process gets SIGTERM, then SIGKILL after
    ``stop_grace_s`` seconds; it is always reaped.

    Args:
        name: the child's name in the supervisor and in logs.
        argv: the program and its arguments (no shell).
        env: variables added to (or overriding) this process's environment; ``None`` passes
            the environment through unchanged.
        restart: the restart policy.
        stop_grace_s: seconds between SIGTERM and SIGKILL.
        came_up: see ``ChildSpec.came_up``.

    Returns:
        The child spec; its ``shutdown_s`` leaves a second beyond the grace period.

    Raises:
        ValueError: when ``argv`` is empty or ``stop_grace_s`` negative.
    """
    argv = list(argv)
    if not argv:
        raise ValueError("argv must name a program")
    if stop_grace_s < 0:
        raise ValueError("stop_grace_s must not be negative")
    full_env = None if env is None else {**os.environ, **env}

    async def start() -> None:
        await _run_once(name, argv, full_env, stop_grace_s)

    return ChildSpec(name=name, start=start, restart=restart, shutdown_s=stop_grace_s + 1.0, came_up=came_up)


async def _run_once(
    name: str, argv: list[str], env: dict[str, str] | None, stop_grace_s: float
) -> None:
    fd, report = tempfile.mkstemp(prefix="ontoflow-cannot-start-")
    os.close(fd)
    try:
        await _run_reporting(name, argv, {**(os.environ if env is None else env), CANNOT_START_ENV: report,
                                            SUPERVISOR_ENV: str(os.getpid())},
                             stop_grace_s, report)
    finally:
        os.unlink(report)


async def _run_reporting(
    name: str, argv: list[str], env: dict[str, str], stop_grace_s: float, report: str
) -> None:
    process = await anyio.open_process(
        argv, stdin=subprocess.DEVNULL, stdout=_our_stderr(), stderr=None, env=env
    )
    log.info("process_started", child=name, pid=process.pid)
    try:
        returncode = await process.wait()
    except BaseException:
        # Cancelled (or interrupted): the process must not outlive its supervisor.
        with anyio.CancelScope(shield=True):
            await _terminate(name, process, stop_grace_s)
        raise
    finally:
        with anyio.CancelScope(shield=True):
            # Closes the transport and reaps: no zombie, no ResourceWarning.
            await process.aclose()
    if returncode != 0:
        reason = _reason(report)
        if reason:
            log.info("process_cannot_start", child=name, pid=process.pid, returncode=returncode)
            raise ChildCannotStart(name, returncode, reason)
        log.warning("process_crashed", child=name, pid=process.pid, returncode=returncode)
        raise ChildProcessCrashed(name, returncode)
    log.info("process_exited", child=name, pid=process.pid)


def _our_stderr() -> int:
    """This process's stderr as a file descriptor (``/dev/null`` when it has none)."""
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # none, or a stand-in without a descriptor (a test's capture)
        return subprocess.DEVNULL


def _reason(report: str) -> str:
    """What the child wrote in its report file (bounded, one line per line), or ''."""
    try:
        with open(report, "rb") as file:
            data = file.read(_REASON_BYTES)
    except OSError:
        return ""
    return data.decode("utf-8", errors="replace").strip()


async def _terminate(name: str, process: Process, grace_s: float) -> None:
    if process.returncode is not None:
        return
    try:
        process.terminate()
    except ProcessLookupError:
        return
    with anyio.move_on_after(grace_s):
        await process.wait()
        log.info("process_terminated", child=name, pid=process.pid)
        return
    try:
        process.kill()
    except ProcessLookupError:
        pass
    await process.wait()
    log.warning("process_killed", child=name, pid=process.pid, grace_s=grace_s)
