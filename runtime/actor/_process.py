"""A supervised OS process: a child spec whose ``start`` runs one real process to its end."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping, Sequence

import anyio
import structlog
from anyio.abc import Process

from ontoflow.runtime.actor._supervisor import ChildSpec, RestartPolicy
from ontoflow.runtime.errors import ChildProcessCrashed

__all__ = ["process_child"]

log = structlog.get_logger()


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

    Each start spawns the process with stdin and stdout on ``/dev/null`` (stdout belongs to
    the command's own answer) and stderr inherited (so its JSON log lines reach ours). A zero
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
    process = await anyio.open_process(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=None, env=env
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
        log.warning("process_crashed", child=name, pid=process.pid, returncode=returncode)
        raise ChildProcessCrashed(name, returncode)
    log.info("process_exited", child=name, pid=process.pid)


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
