"""A process a capability forks does not come back into the worker.

A capability that calls ``os.fork()`` and lets the child return from ``execute`` (or raise out
of it) had that child go on as a copy of the worker host: its event loop, its sockets (libzmq's
threads are not copied), its step runners. It answered nothing, was reparented to init when the
worker went, and spun at 100% of a core for ever. A child that runs its own code and ends with
``os._exit`` (``multiprocessing``'s fork start, ``subprocess``) never comes back here and is not
touched. One that ends with ``sys.exit(n)`` (any ``SystemExit``) raises out of ``execute``: it
exits here with what it asked (``n``), as it would have alone. (Leaving a step's time limit,
anyio's cancel scope finds no running loop in a forked child and raises ``RuntimeError`` over
the exit: the exit is found in what that error came from.) The check is a counter the child's
``os.register_at_fork`` hook bumps: the base reads it before ``execute`` and compares after (a
global read and a call a step, no system call).
"""

from __future__ import annotations

import os
import sys
import threading

__all__ = ["check", "count", "leave"]

#: Forks this process is a child of (bumped in the child, at the fork).
count = 0


def _forked() -> None:
    global count
    count += 1


os.register_at_fork(after_in_child=_forked)


def check(forks: int, capability_id: str, raised: BaseException | None = None) -> None:
    """:func:`leave` when this process was forked since ``count`` was ``forks`` (in ``execute``),
    having ``raised`` (what came out of ``execute``, if anything); a child that asked to exit
    (a ``SystemExit``, or an error raised over one) exits as asked instead (:func:`exit_as_asked`)."""
    if count != forks:
        for _ in range(8):  # an exit under a few errors raised over it, not a long chain
            if raised is None or isinstance(raised, SystemExit):
                break
            raised = raised.__context__
        if isinstance(raised, SystemExit):
            exit_as_asked(raised)
        leave(capability_id)


def exit_as_asked(request: SystemExit) -> None:
    """End this forked child as ``sys.exit`` would have ended it alone: its status (None: 0;
    an int: that; anything else written on stderr, then 1), its buffered output flushed if it
    can be, and nothing else run (no cleanup: its state is its parent's, the worker's sockets
    and loop).

    A stream's lock held by another thread of the worker at the fork stays held in the child for
    ever (that thread is not copied): flushing it here blocked the child for good. So the flush
    runs in a helper thread, waited on for at most ``_FLUSH_S``, and the text is written with
    ``os.write``, taking no Python lock."""
    code = request.code
    status = 0 if code is None else code if isinstance(code, int) else 1
    try:
        flusher = threading.Thread(target=_flush, name="ontoflow-forked-exit", daemon=True)
        flusher.start()
        flusher.join(_FLUSH_S)
        if not isinstance(code, int | None):
            os.write(2, f"{code}\n".encode("utf-8", "replace"))
    except BaseException:  # noqa: BLE001, S110 - a closed or broken stream: the exit comes anyway
        pass
    finally:
        os._exit(status & 0xFF)


#: How long a forked child's exit waits for its buffered output to be flushed (``exit_as_asked``).
_FLUSH_S = 2.0


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except BaseException:  # noqa: BLE001, S110 - a closed or broken stream: nothing to flush
            pass


def leave(capability_id: str) -> None:
    """End this process, a child forked by ``capability_id``'s ``execute`` that came back out of
    it, at once (no cleanup: its state is its parent's), saying so on stderr (the id only)."""
    try:
        os.write(2, f"ontoflow: a process forked by capability {capability_id!r} came back out of its "
                    "execute(); it exits (end a forked child with os._exit)\n".encode("utf-8", "replace"))
    finally:
        os._exit(70)  # EX_SOFTWARE
