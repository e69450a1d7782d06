"""Running a capability's ``shutdown()`` so that it can neither hold its host up nor take it
down: the last hook of seed 001's lifecycle, run for every started capability, in reverse."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import structlog

from ontoflow.actors.capability._cancel import must_propagate

if TYPE_CHECKING:
    from ontoflow.actors.capability._base import Capability

__all__ = ["shut_down"]

log = structlog.get_logger()


async def shut_down(cap: Capability, *, timeout_s: float) -> bool:
    """Run ``cap.shutdown()`` for at most ``timeout_s``; never raises but a cancellation of the
    calling task.

    A shutdown that hangs held its worker (and ``run_manifest``) up forever, under the shield
    its host runs it in; one that called ``sys.exit`` skipped the shutdown of every capability
    started before it and ended the caller's process. Both are logged now (the type, never the
    text), and the next capability is shut down.

    Args:
        cap: the capability to stop.
        timeout_s: how long its ``shutdown()`` may take.

    Returns:
        True when ``shutdown()`` returned in time.
    """
    capability = type(cap).metadata.id
    try:
        with anyio.move_on_after(timeout_s) as scope:
            await cap.shutdown()
    except BaseException as exc:  # an exit too, but a cancellation must propagate
        if must_propagate(exc):
            raise
        log.warning("capability_shutdown_failed", capability=capability, error=type(exc).__name__)
        return False
    if scope.cancelled_caught:
        log.warning("capability_shutdown_timed_out", capability=capability, timeout_s=timeout_s)
        return False
    return True
