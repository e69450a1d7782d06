"""A process a capability forks does not come back into the worker.

A capability that calls ``os.fork()`` and lets the child return from ``execute`` (or raise out
of it) had that child go on as a copy of the worker host: its event loop, its sockets (libzmq's
threads are not copied), its step runners. It answered nothing, was reparented to init when the
worker went, and spun at 100% of a core for ever. A child that runs its own code and ends with
``os._exit`` (``multiprocessing``'s fork start, ``subprocess``) never comes back here and is not
touched. The check is a counter the child's ``os.register_at_fork`` hook bumps: the base reads
it before ``execute`` and compares after (a global read and a call a step, no system call).
"""

from __future__ import annotations

import os

__all__ = ["check", "count", "leave"]

#: Forks this process is a child of (bumped in the child, at the fork).
count = 0


def _forked() -> None:
    global count
    count += 1


os.register_at_fork(after_in_child=_forked)


def check(forks: int, capability_id: str) -> None:
    """:func:`leave` when this process was forked since ``count`` was ``forks`` (in ``execute``)."""
    if count != forks:
        leave(capability_id)


def leave(capability_id: str) -> None:
    """End this process, a child forked by ``capability_id``'s ``execute`` that came back out of
    it, at once (no cleanup: its state is its parent's), saying so on stderr (the id only)."""
    try:
        os.write(2, f"ontoflow: a process forked by capability {capability_id!r} came back out of its "
                    "execute(); it exits (end a forked child with os._exit)\n".encode("utf-8", "replace"))
    finally:
        os._exit(70)  # EX_SOFTWARE
