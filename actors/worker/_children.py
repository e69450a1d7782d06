"""The processes a worker's steps started and left running, ended when the worker process stops.

A capability that starts a process and does not wait for it (``subprocess.Popen`` without
``wait``, a helper server) left it running after its worker stopped: reparented, holding
whatever it held (a port, a GPU, a lock file), for ever, one more per worker restart. A
worker process of its own (``ontoflow worker``, with ``drain_on_signals``) now ends, once its
capabilities' ``shutdown()`` ran (a capability may stop its own processes gracefully there),
every child process it still has: SIGTERM, ``CHILDREN_GRACE_S`` to exit, then SIGKILL, each
reaped (``worker_children_ended``). As Ray's ``kill_child_processes_on_worker_exit``.

While the worker runs, a child a step started with ``Popen`` and dropped unwaited is reaped once
it exits (``reap_dropped``, on the worker's 500 ms look; ``step_children_reaped``): Python
reaps such a one only when the next ``Popen`` is made, so a capability that starts one per step
and never another filled the process table with zombies, one per step, until no process could
be started on the host. Only those ``Popen`` let go of are reaped: one a capability still holds
keeps its exit status for its own ``wait``.

What is left alone, and why: a process a step's child started in turn (a grandchild) or one
started in a session of its own and reparented already, is no child of the worker (a detached
daemon is the capability's to own); children are not ended when the step that started them
ends (with several slots no process is known to belong to one step); a worker killed outright
(SIGKILL) ends nothing; a worker embedded in another program's process leaves that process's
children alone. Children are found in ``/proc`` (Linux); elsewhere none are.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import structlog

__all__ = ["CHILDREN_GRACE_S", "child_pids", "end_children", "reap_dropped"]

log = structlog.get_logger()

#: How long a child process may take to exit after SIGTERM before it is killed.
CHILDREN_GRACE_S = 2.0

_POLL_S = 0.02  # how often the children's exits are looked for within the grace


def child_pids(pid: int | None = None) -> list[int]:
    """The processes whose parent is ``pid`` (this process by default), exited ones too."""
    parent = os.getpid() if pid is None else pid
    found = []
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = entry.read_text().rsplit(")", 1)[1].split()  # the name, in parentheses, may hold anything
        except (OSError, IndexError):
            continue  # gone meanwhile, or not readable
        if len(fields) > 1 and fields[1] == str(parent):
            found.append(int(entry.parent.name))
    return found


def end_children(grace_s: float = CHILDREN_GRACE_S) -> int:
    """End (SIGTERM, then SIGKILL past ``grace_s``) and reap every child of this process.

    Returns:
        How many there were.
    """
    pids = child_pids()
    if not pids:
        return 0
    log.warning("worker_children_ended", count=len(pids), grace_s=grace_s)
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    left = set(pids)
    deadline = time.monotonic() + grace_s
    while True:
        left = {pid for pid in left if not _reaped(pid)}
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(_POLL_S)
    for pid in left:
        _signal(pid, signal.SIGKILL)
        _reaped(pid, block=True)
    return len(pids)


def reap_dropped() -> int:
    """Reap the exited children of ``Popen`` objects no one holds any more (what the next
    ``Popen`` would do: ``subprocess._cleanup``; without it, nothing).

    Returns:
        How many were reaped.
    """
    active = getattr(subprocess, "_active", None)
    cleanup = getattr(subprocess, "_cleanup", None)
    if not active or cleanup is None:
        return 0
    before = len(active)
    cleanup()
    return before - len(active)


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _reaped(pid: int, *, block: bool = False) -> bool:
    """Whether child ``pid`` has exited (reaped here; one another waiter reaped counts)."""
    try:
        done, _ = os.waitpid(pid, 0 if block else os.WNOHANG)
    except ChildProcessError:
        return True
    return done != 0
