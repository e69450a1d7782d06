"""The run side of the orchestrator shell: one run's record, applying facts, ending runs.

``RunsMixin`` holds what the orchestrator does with a run once a fact about it is known:
journal the fact (when a journal is on), hand it to the pure engine, carry out the commands,
publish the end. It is a mixin of :class:`~actors.orchestrator.Orchestrator`, split out so that
each concern of the shell reads on its own.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import anyio
import msgspec
import structlog

from ontoflow.actors.orchestrator._results import RunResult
from ontoflow.actors.orchestrator.engine import (
    CancelStep,
    Dispatch,
    RunCancelled,
    RunEnded,
    StepDeadlineExpired,
    advance,
    new_run,
)

__all__ = ["RunsMixin"]

log = structlog.get_logger()

fact_encoder = msgspec.msgpack.Encoder()


def _where(exc: BaseException) -> str:
    """``file:line`` of the innermost frame of ``exc`` (a location, never a value)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}" if tb is not None else "?"


class _Run:
    __slots__ = ("advance", "done", "logged", "result", "source_hash", "state", "workflow")

    def __init__(self, workflow: Any, run_id: str, source_hash: str | None = None) -> None:
        self.workflow = workflow
        # A workflow compiled by the engine, or any other plan kind that brings its own pure
        # engine: an object with ``new_run(run_id)`` and ``advance(state, fact)`` speaking the
        # same facts and commands (the DAG plans do).
        if hasattr(workflow, "advance"):
            self.state = workflow.new_run(run_id)
            self.advance = workflow.advance
        else:
            self.state = new_run(workflow, run_id)
            self.advance = partial(advance, workflow)
        # Made by the first ``result()`` that waits: most runs are never awaited one by one (a
        # daemon answers through ``on_run_ended``), and an anyio Event costs microseconds.
        self.done: anyio.Event | None = None
        self.logged = 0
        self.result: RunResult | None = None
        #: The pinned source in the journal; None for a run the journal does not hold.
        self.source_hash = source_hash


class RunsMixin:
    """Applying facts to runs and carrying out the engine's commands (see module docstring)."""

    _runs: dict[str, _Run]
    _run_deadlines: dict[str, int]
    _deadlines: dict[tuple[str, str, int], int]
    on_run_ended: list[Any]
    on_progress: list[Any]
    runs_in_flight: int

    def _apply(self, run: _Run, fact: Any) -> None:
        if run.source_hash is not None and self._batch is not None:  # type: ignore[attr-defined]
            # Journaled before its consequences are sent: the batch commits, then the outbox goes.
            self._batch.fact(run.state.run_id, "fact", fact.now_ms, fact_encoder.encode(fact))  # type: ignore[attr-defined]
        commands = run.advance(run.state, fact)
        self._log_progress(run)
        for command in commands:
            match command:
                case Dispatch():
                    self._dispatch(command, fact.now_ms)  # type: ignore[attr-defined]
                case CancelStep(run_id=run_id, step_id=step_id, attempt=attempt):
                    self._cancel_step(run_id, step_id, attempt)  # type: ignore[attr-defined]
                case RunEnded():
                    self._finish(run, command)

    def _expire_deadlines(self, now: int) -> None:
        for key, deadline in list(self._deadlines.items()):
            if deadline <= now and key in self._deadlines:
                run = self._runs.get(key[0])
                del self._deadlines[key]
                if run is not None and run.result is None:
                    log.warning("step_deadline_expired", run_id=key[0], step_id=key[1], attempt=key[2])
                    self._apply(run, StepDeadlineExpired(step_id=key[1], attempt=key[2], now_ms=now))
        if self._run_deadlines:
            for run_id, deadline in list(self._run_deadlines.items()):
                if deadline <= now:
                    del self._run_deadlines[run_id]
                    run = self._runs.get(run_id)
                    if run is not None and run.result is None:
                        log.warning("run_deadline_expired", run_id=run_id)
                        self._apply(run, RunCancelled(reason="run deadline expired", now_ms=now))

    def _finish(self, run: _Run, ended: RunEnded) -> None:
        state = run.state
        run.result = result_of(state, ended.status, ended.error)
        if run.source_hash is not None and self._batch is not None:  # type: ignore[attr-defined]
            self._batch.end(state.run_id, ended.status, state.ended_ms or 0)  # type: ignore[attr-defined]
        self.runs_in_flight -= 1
        duration = (state.ended_ms or 0) - (state.started_ms or 0)
        if ended.status == "completed":
            if self._log_info:  # type: ignore[attr-defined]
                log.info("run_completed", run_id=state.run_id, steps=len(state.trace), duration_ms=duration)
        else:
            log.warning("run_failed", run_id=state.run_id, status=ended.status, error=ended.error, steps=len(state.trace))
        self._run_deadlines.pop(state.run_id, None)
        if run.done is not None:
            run.done.set()
        for callback in self.on_run_ended:
            try:
                callback(run.result)
            except Exception as exc:  # an observer's bug must not break the run's end
                log.error("run_ended_callback_failed", run_id=state.run_id, error=type(exc).__name__, where=_where(exc))

    def _log_progress(self, run: _Run) -> None:
        state = run.state
        verbose = self._log_info  # type: ignore[attr-defined]
        if state.notes:
            if verbose:
                for note in state.notes:
                    log.info("engine_note", run_id=state.run_id, note=note)
            state.notes.clear()
        trace = state.trace
        if run.logged == len(trace):
            return
        fresh = trace[run.logged :]
        run.logged = len(trace)
        if verbose:
            self._log_steps(state.run_id, fresh)
        for callback in self.on_progress:
            try:
                callback(state.run_id, fresh)
            except Exception as exc:  # a watcher's bug must not break the run
                log.error("progress_callback_failed", run_id=state.run_id, error=type(exc).__name__, where=_where(exc))

    @staticmethod
    def _log_steps(run_id: str, entries: list[Any]) -> None:
        for entry in entries:
            log.info(
                "step_completed",
                run_id=run_id,
                step_id=entry.step_id,
                node=entry.node,
                block=entry.block,
                capability=entry.capability,
                outcome=entry.event,
                attempt=entry.attempt,
                duration_ms=entry.duration_ms,
                retries=entry.retries,
                reason=entry.reason,
            )
            if entry.action is not None:
                log.info("transition_taken", run_id=run_id, block=entry.block, signal=entry.event, action=entry.action)


def result_of(state: Any, status: str, error: str | None) -> RunResult:
    """The :class:`RunResult` of an ended run's state."""
    return RunResult(
        run_id=state.run_id,
        status=status,
        error=error,
        context=state.context,
        trace=list(state.trace),
        started_ms=state.started_ms,
        ended_ms=state.ended_ms,
    )
