"""Running a capability's ``shutdown()`` so that it can neither hold its host up nor take it
down: the last hook of seed 001's lifecycle, run for every started capability, in reverse."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import structlog

from ontoflow.actors.capability._cancel import must_propagate
from ontoflow.actors.capability._scrub import type_name
from ontoflow.actors.capability._watchdog import BLOCKED_GRACE_S, watch_blocking

if TYPE_CHECKING:
    from ontoflow.actors.capability._base import Capability

__all__ = ["shut_down"]

log = structlog.get_logger()



async def shut_down(cap: Capability, *, timeout_s: float, own_process: bool = False) -> bool:
    """Run ``cap.shutdown()`` for at most ``timeout_s``; never raises but a cancellation of the
    calling task.

    A shutdown that hangs held its worker (and ``run_manifest``) up forever, under the shield
    its host runs it in; one that called ``sys.exit`` skipped the shutdown of every capability
    started before it and ended the caller's process. Both are logged now (the type, never the
    text), and the next capability is shut down. One that blocks the event loop for good (a
    blocking client with no timeout) cannot be cancelled: a watchdog thread logs it
    (``capability_shutdown_blocked``) and, in a worker process of its own, ends the process
    with exit code 1 and the error on stderr (before, a SIGTERM'd worker never exited).

    Args:
        cap: the capability to stop.
        timeout_s: how long its ``shutdown()`` may take.
        own_process: the caller is a worker process of its own (``ontoflow worker``).

    Returns:
        True when ``shutdown()`` returned in time.
    """
    capability = type(cap).metadata.id
    blocked = f"capability {capability!r} did not shut down within {timeout_s:g} s: it blocks the event loop"
    try:
        with watch_blocking(timeout_s + BLOCKED_GRACE_S, "capability_shutdown_blocked", blocked,
                            own_process=own_process, capability=capability, timeout_s=timeout_s), \
                anyio.move_on_after(timeout_s) as scope:
            await cap.shutdown()
    except BaseException as exc:  # an exit too, but a cancellation must propagate
        if must_propagate(exc):
            raise
        log.warning("capability_shutdown_failed", capability=capability, error=type_name(exc))
        return False
    if scope.cancel_called or anyio.current_time() >= scope.deadline:  # stopped, or back too late
        log.warning("capability_shutdown_timed_out", capability=capability, timeout_s=timeout_s)
        return False
    return True
