"""A watchdog thread for a hook that may block the event loop for good (``initialize()`` or
``shutdown()`` calling a blocking client with no timeout).

A cancel scope stops a hook that waits; one that blocks the loop never reaches a wait, so no
scope can. A thread still runs: if the hook has not returned ``after_s`` from its start, the
watchdog logs it and, in a worker process of its own, writes the error on stderr and ends the
process with exit code 1, as nothing else can ever run in it (no cleanup either). A host
embedded in another program's process is only told.
"""

from __future__ import annotations

import math
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import structlog

__all__ = ["BLOCKED_GRACE_S", "EXIT_BLOCKED", "watch_blocking"]

log = structlog.get_logger()

#: The exit code of a worker process a hook blocks for good (the CLI's "failed").
EXIT_BLOCKED = 1

#: How long after a hook's bound the watchdog waits before it calls the event loop blocked (a
#: loop that is only busy has by then cancelled the hook, which has then ended).
BLOCKED_GRACE_S = 1.0


@contextmanager
def watch_blocking(after_s: float, event: str, error: str, *, own_process: bool, **fields: Any) -> Iterator[None]:
    """Watch the block's code from another thread for ``after_s``.

    Args:
        after_s: how long the code may run before it is called blocked (``math.inf``: no watch).
        event: the log line's event name; ``fields`` its data (never a value the hook was given).
        error: the error written on stderr, ``ontoflow: `` first, when the process is ended.
        own_process: end the process (a worker process of its own), or only log.
    """
    returned = threading.Event()
    if after_s < math.inf:
        threading.Thread(target=_watch, args=(returned, after_s, event, error, own_process, fields),
                         daemon=True, name=f"ontoflow-watchdog-{event}").start()
    try:
        yield
    finally:
        returned.set()


def _watch(returned: threading.Event, after_s: float, event: str, error: str, own_process: bool,
           fields: dict[str, Any]) -> None:
    if returned.wait(after_s):
        return
    log.error(event, **fields)
    if own_process and not returned.is_set():
        if sys.stderr is not None:
            sys.stderr.write(f"ontoflow: {error}\n")
            sys.stderr.flush()
        os._exit(EXIT_BLOCKED)  # the loop will never run again
