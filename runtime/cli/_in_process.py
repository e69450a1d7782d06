"""A run on a local cluster, for ``run``, ``plan run`` and ``pipeline run``: its progress on a
terminal, and its end when a stop signal comes (``_signals``).

:func:`stoppable` runs a verb's event loop with SIGINT and SIGTERM handled: a signal while the
cluster starts ends the verb (nothing ran); a signal while the run runs cancels the run
(:func:`run_with_progress`), whose result is then what it did so far: printed as any run's end
is, with the exit code 130 (SIGINT) or 143 (SIGTERM); a signal once the run has ended changes
nothing (its result and exit code stand).
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from ontoflow.actors.errors import CapabilityInitError
from ontoflow.actors.orchestrator import RunResult
from ontoflow.runtime.cli._shared import EXIT_FAILED, EXIT_OK, ProgressLine, describe, fail, first_error, print_result, safe_text
from ontoflow.runtime.cli._signals import STOP
from ontoflow.runtime.embedded import LocalCluster
from ontoflow.runtime.errors import ChildCannotStart, KernelError
from ontoflow.runtime.loop import run as run_async

__all__ = ["STOP_GRACE_S", "failure_text", "run_with_progress", "stoppable"]

#: How long a run stopped by a signal gives its running steps to take their Cancel.
STOP_GRACE_S = 2.0


async def run_with_progress(cluster: LocalCluster, compiled: Any, inputs: dict[str, Any]) -> tuple[RunResult, bool]:
    """Run ``compiled`` on ``cluster`` to its end; on a terminal, show its progress on stderr.

    The same as ``cluster.run``, with the run's state read every 0.1 s while it runs: the
    steps it has done (its trace) and the ones in flight (the engine's ``in_flight``). A stop
    signal while it runs (``STOP``) cancels it: see :func:`_stopped`.

    Returns:
        The run's result, and whether a stop signal ended it (True) or it ended by itself.
    """
    orchestrator = cluster.orchestrator
    run_id = orchestrator.submit(compiled, inputs)
    result: RunResult | None = None
    try:
        with ProgressLine() as line, STOP.stopping():
            async with anyio.create_task_group() as tg:

                async def watch() -> None:
                    while True:
                        await anyio.sleep(0.1)  # a display refresh, not a synchronisation
                        state = orchestrator.run_state(run_id)
                        running = [(d.step_id, d.capability) for d in compiled.in_flight(state)]
                        line.show(safe_text(describe(len(state.trace), running)))  # no raw ESC via rich

                if line.enabled:
                    tg.start_soon(watch)
                result = await orchestrator.result(run_id)
                tg.cancel_scope.cancel()
        if result is not None:  # ended by itself: a signal after that (the watcher stopping) changes nothing
            return result, False
        # Only a stop signal cancels that scope: the run goes on until we cancel it (a run that
        # ended by itself before the signal was acted on stands as it ended).
        return await _stopped(cluster, run_id)
    finally:
        orchestrator.forget(run_id)


async def _stopped(cluster: LocalCluster, run_id: str) -> tuple[RunResult, bool]:
    """Cancel ``run_id`` (a stop signal came) and return its result: ``cancelled``, with every
    step that ended and the one cancelled; when its running steps do not take their Cancel
    within ``STOP_GRACE_S``, what its trace holds by then. The flag says whether the signal
    stopped it: False when the run had already ended by itself (its result stands)."""
    orchestrator = cluster.orchestrator
    reason = f"interrupted by {signal.Signals(STOP.signum or signal.SIGINT).name}"
    ended_by_itself = orchestrator.status(run_id) is not None
    with anyio.move_on_after(STOP_GRACE_S):
        if not ended_by_itself:
            orchestrator.cancel(run_id, reason)
        return await orchestrator.result(run_id), not ended_by_itself
    state = orchestrator.run_state(run_id)
    return RunResult(run_id=run_id, status="cancelled", error=f"run cancelled: {reason}",
                     context=dict(getattr(state, "context", None) or {}), trace=list(state.trace),
                     started_ms=getattr(state, "started_ms", 0) or 0, ended_ms=0), True


def stoppable(go: Callable[[], Awaitable[tuple[RunResult, bool]]], *, as_json: bool,
              after: Callable[[], None] | None = None, loop: Callable[..., Any] = run_async) -> int:
    """Run ``go`` (a local cluster and :func:`run_with_progress` in it) with the stop signals
    handled; print the run's result; return the verb's exit code (0 completed, 1 failed, 130
    or 143 stopped by a signal). ``after`` runs once the cluster is down, whatever happened
    (a work folder removed); ``loop`` runs the event loop (``runtime.loop.run``: uvloop when
    installed)."""

    async def started() -> tuple[RunResult, bool] | None:
        with STOP.stopping():  # while the cluster starts; the run has a scope of its own
            return await go()
        return None

    with STOP.installed():
        try:
            try:
                # A capability in this process (--transport inproc) that prints must not mix its
                # lines into the answer (a --json object): stdout is the answer's, after the run.
                with contextlib.redirect_stdout(sys.stderr):
                    ended = loop(started)
            except (KernelError, CapabilityInitError, BaseExceptionGroup) as exc:  # their text is scrubbed; a traceback's is not
                return fail(failure_text(first_error(exc, (KernelError, CapabilityInitError))), EXIT_FAILED)
            finally:
                if after is not None:
                    after()
            STOP.settle()  # the answer is in hand: a signal from now on changes nothing
            if ended is None:
                return fail("interrupted before the run started", STOP.exit_code(), kind="interrupted")
            result, interrupted = ended
            print_result(result, as_json=as_json)
            if interrupted:
                return fail(f"{result.error or 'interrupted'}; the steps it ran are above", STOP.exit_code(),
                            kind="interrupted")
            return EXIT_OK if result.status == "completed" else EXIT_FAILED
        finally:
            STOP.settle()


def failure_text(exc: BaseException) -> str:
    """What a failure to run prints (``run``, ``plan run``, ``pipeline run``, ``ask``, ``chat``):
    its own (scrubbed) text; for a worker that cannot start, which worker, and why it was not
    restarted as a crashed one is."""
    if isinstance(exc, ChildCannotStart):
        return f"{exc.reason} ({exc.name} is not restarted: restarts would fail the same way)"
    return str(exc)
