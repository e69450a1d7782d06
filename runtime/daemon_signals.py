"""The daemon's stop signals: which ones drain it, and the drain a second signal cuts short.

SIGTERM and SIGINT drain the daemon (stop accepting, let running steps answer within the
grace period, journal everything, exit 0). So does SIGHUP, the signal a closed terminal or an
ssh session that drops sends: its default action killed the daemon on the spot (exit 129,
nothing logged), which loses nothing acknowledged but skips the drain every other stop gets.
A daemon started under ``nohup`` (SIGHUP ignored) keeps ignoring it.

Once drained, the requests still waiting on a new document's check (``actors.orchestrator``'s
``DocumentChecks``) are answered ``unavailable`` before the socket closes.

A second stop signal during the drain ends the drain at once: the operator who asks twice
(a second Ctrl-C) does not want to wait the rest of a 30 s grace period.
The steps still running are then left to the next start, as at the end of the grace period.
"""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import anyio
import structlog

from ontoflow.runtime.loop import stop_signals

if TYPE_CHECKING:  # the daemon composes them; this module only drives their stop
    from ontoflow.actors.orchestrator import ClientService, Orchestrator

__all__ = ["drain_on_signal", "stop_signals"]  # stop_signals: re-exported from runtime.loop

log = structlog.get_logger()


async def drain_on_signal(signals: AsyncIterator[int], orchestrator: Orchestrator, clients: ClientService,
                          grace_s: float) -> None:
    """Wait for a stop signal, then stop accepting, let running steps finish within
    ``grace_s`` (less if another stop signal comes) and stop the orchestrator.

    Args:
        signals: the receiver of ``runtime.loop.stop_signals``.
        orchestrator: the daemon's orchestrator.
        clients: its client service (told to refuse submits).
        grace_s: how long running steps may take to answer.
    """
    async for signum in signals:
        log.info("daemon_stopping", signal=signal.Signals(signum).name)
        break
    clients.accepting = False
    async with anyio.create_task_group() as tg:

        async def cut_short() -> None:
            async for signum in signals:
                log.warning("daemon_drain_cut_short", signal=signal.Signals(signum).name)
                drain.cancel()
                return

        with anyio.CancelScope() as drain:
            tg.start_soon(cut_short)
            left = await orchestrator.drain(grace_s)
        if drain.cancelled_caught:  # a grace period of 0: counts what is left, flushes the outbox
            left = await orchestrator.drain(0)
        tg.cancel_scope.cancel()
    log.info("daemon_drained", steps_still_running=left, runs_in_flight=orchestrator.runs_in_flight)
    # Before the socket closes: a request waiting on a document's check gets ``unavailable``
    # now, not silence until its client's own timeout.
    clients.checks.refuse_waiting()
    orchestrator.stop()
