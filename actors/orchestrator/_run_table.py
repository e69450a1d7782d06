"""The run table: every run's engine and state, applied facts, run deadlines, ended runs.

A run is a :class:`~actors.orchestrator.engine.RunEngine` (the compiled document) and the state
it drives; the table never tells workflows and plans apart. :meth:`RunTable.advance` hands a
fact to the engine and publishes the steps it ended (log lines, ``on_progress`` watchers);
:meth:`RunTable.end` records a run's end and publishes its result (``on_run_ended``). It does
no I/O of its own and reads no clock: what the engine's commands ask for (an Invoke, a Cancel)
is the orchestrator's to carry out.

A run suspended on a question (``engine._suspend``) stays here, live; the table keeps each open
question's token and its expiry (``since_ms`` plus ``answer_timeout_ms``), so an answer can name
a token alone and :meth:`RunTable.questions_expired` tells the orchestrator which questions to
end with ``RunExpired``. A recovered run's questions are armed again (:meth:`RunTable.rearm`)
from its replayed state: the expiry survives a restart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import anyio
import structlog

from ontoflow.actors.orchestrator._results import RunResult
from ontoflow.actors.orchestrator.engine import (
    Command, Fact, RunEnded, RunEngine, Suspended, Suspension, check_answer, engine_failure,
)
from ontoflow.protocols.client import Question
from ontoflow.protocols.types import RunStatusName
from ontoflow.runtime.actor import where

__all__ = ["DEFAULT_ANSWER_TIMEOUT_MS", "AnswerRefused", "Run", "RunTable", "result_of"]

log = structlog.get_logger()

#: How long a suspended run waits for an answer before it ends ``expired`` (a day).
DEFAULT_ANSWER_TIMEOUT_MS = 24 * 3600 * 1000


class AnswerRefused(ValueError):
    """Raised when an answer cannot resume a run; ``code`` is the client API's error code
    (``unknown_run``, ``not_suspended``, ``invalid_answer``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class Run:
    """One run: its engine, its state, and once it ended its result.

    Args:
        engine: the compiled workflow or plan.
        run_id: the run's id.
        source_hash: the pinned source in the journal; ``None`` for a run the journal does
            not hold.
    """

    __slots__ = ("advance", "done", "engine", "logged", "result", "source_hash", "state")

    def __init__(self, engine: RunEngine, run_id: str, source_hash: str | None = None) -> None:
        self.engine = engine
        self.state = engine.new_run(run_id)
        self.advance = engine.advance  # bound once: it is called for every fact
        # Made by the first ``wait`` on it: most runs are never awaited one by one (a daemon
        # answers through ``on_run_ended``), and an anyio Event costs microseconds.
        self.done: anyio.Event | None = None
        self.logged = 0
        self.result: RunResult | None = None
        self.source_hash = source_hash

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self.state.run_id

    @property
    def journaled(self) -> bool:
        """Whether the journal holds this run."""
        return self.source_hash is not None

    def replay(self, facts: list[Fact]) -> None:
        """Apply journaled ``facts`` through the engine, publishing nothing (a rebuilt run)."""
        advance, state = self.advance, self.state
        for fact in facts:
            advance(state, fact)
        state.notes.clear()
        self.logged = len(state.trace)

    async def wait(self) -> RunResult:
        """Return the run's result once it ended."""
        if self.result is None:
            if self.done is None:
                self.done = anyio.Event()
            await self.done.wait()
        assert self.result is not None  # set before done, by RunTable.end
        return self.result


#: The most idempotency (and trigger) keys held for runs forgotten without a journal to answer
#: for them: past it the oldest go (a resubmit of such a key then starts a new run).
MAX_KEYS = 1 << 20


class RunTable:
    """The runs an orchestrator holds (see the module docstring).

    Attributes:
        on_run_ended: called with each run's :class:`RunResult` when it ends.
        on_progress: called as ``callback(run_id, trace_entries)`` when steps of a run end.
        in_flight: runs started and not ended.
        by_id: every run held, by id (read it, never change it).
        log_info: log one line per step and per run end (the actor sets it once per batch).
        on_suspended: called with a run after each fact that leaves it ``suspended``.
        answer_timeout_ms: how long a question waits for an answer; ``None``: forever.
    """

    def __init__(self, *, answer_timeout_ms: int | None = DEFAULT_ANSWER_TIMEOUT_MS) -> None:
        #: Every run held, by id (read it, never change it): the pool looks one up per Outcome.
        self.by_id: dict[str, Run] = {}
        self._runs = self.by_id
        self._deadlines: dict[str, int] = {}
        self._by_key: dict[str, str] = {}
        self._by_trigger: dict[str, str] = {}
        self._keys_of: dict[str, tuple[str | None, str | None]] = {}  # run id -> its keys, for ``forget``
        self.on_run_ended: list[Callable[[RunResult], None]] = []
        self.on_progress: list[Callable[[str, list[Any]], None]] = []
        self.in_flight = 0
        self.log_info = True
        self.on_suspended: list[Callable[[Run], None]] = []
        self.answer_timeout_ms = answer_timeout_ms
        self._questions: dict[str, tuple[str, int | None]] = {}  # token -> (run id, expires at)

    def __len__(self) -> int:
        return len(self._runs)

    def __iter__(self) -> Iterator[Run]:
        """Every run held, oldest first."""
        return iter(self._runs.values())

    def __contains__(self, run_id: object) -> bool:
        return run_id in self._runs

    def get(self, run_id: str) -> Run | None:
        """The run ``run_id``, ended or not, or None."""
        return self._runs.get(run_id)

    def running(self, run_id: str) -> list[tuple[str, str]]:
        """The steps of ``run_id`` in flight as (step id, capability), in step-id order; none for
        a run not held or ended (what a watcher is shown as in progress)."""
        run = self.live(run_id)
        return [] if run is None else [(d.step_id, d.capability) for d in run.engine.in_flight(run.state)]

    def live(self, run_id: str) -> Run | None:
        """The run ``run_id`` while it has not ended, else None."""
        run = self._runs.get(run_id)
        return run if run is not None and run.result is None else None

    def add(self, run: Run, *, deadline_at_ms: int | None = None, idempotency_key: str | None = None,
            trigger_key: str | None = None) -> None:
        """Hold a started (or recovered) run.

        Args:
            deadline_at_ms: when the run is cancelled if it has not ended (``expired``).
            idempotency_key, trigger_key: what ``find`` answers this run for.
        """
        run_id = run.state.run_id
        self._runs[run_id] = run
        self.in_flight += 1
        if deadline_at_ms is not None:
            self._deadlines[run_id] = deadline_at_ms
        if idempotency_key is not None or trigger_key is not None:
            self._keys_of[run_id] = (idempotency_key, trigger_key)
            if idempotency_key is not None:
                self._by_key[idempotency_key] = run_id
                if len(self._by_key) > MAX_KEYS:  # only runs kept for good (no journal): the oldest go
                    self._by_key.pop(next(iter(self._by_key)))
            if trigger_key is not None:
                self._by_trigger[trigger_key] = run_id
                if len(self._by_trigger) > MAX_KEYS:
                    self._by_trigger.pop(next(iter(self._by_trigger)))

    def find(self, *, idempotency_key: str | None = None, trigger_key: str | None = None) -> str | None:
        """The id of the run held for ``idempotency_key`` (or ``trigger_key``), or None."""
        if idempotency_key is not None:
            return self._by_key.get(idempotency_key)
        if trigger_key is not None:
            return self._by_trigger.get(trigger_key)
        return None

    def forget(self, run_id: str, *, keys: bool = False) -> None:
        """Drop an ended run (a long-running process would otherwise keep them all), and with
        ``keys`` what ``find`` answers for it (a journal answers from now on: kept, every CLI
        submit's idempotency key grew a journaled daemon's memory for as long as it ran)."""
        run = self._runs.get(run_id)
        if run is not None and run.result is not None:
            del self._runs[run_id]
            if keys:
                idempotency_key, trigger_key = self._keys_of.pop(run_id, (None, None))
                if idempotency_key is not None and self._by_key.get(idempotency_key) == run_id:
                    del self._by_key[idempotency_key]
                if trigger_key is not None and self._by_trigger.get(trigger_key) == run_id:
                    del self._by_trigger[trigger_key]
            else:
                self._keys_of.pop(run_id, None)

    def expired(self, now: int) -> list[Run]:
        """The live runs whose deadline is past (each reported once)."""
        if not self._deadlines:
            return []
        late = [run_id for run_id, deadline in self._deadlines.items() if deadline <= now]
        found = []
        for run_id in late:
            del self._deadlines[run_id]
            run = self.live(run_id)
            if run is not None:
                found.append(run)
        return found

    def expires_at(self, since_ms: int) -> int | None:
        """When a question asked at ``since_ms`` expires (``None``: never)."""
        return None if self.answer_timeout_ms is None else since_ms + self.answer_timeout_ms

    def suspended(self, run: Run, command: Suspended) -> None:
        """Hold the question ``command`` announces (its token, its expiry)."""
        self._questions[command.token] = (run.run_id, self.expires_at(command.since_ms))
        log.info("run_suspended", run_id=run.run_id, step_id=command.step_id, capability=command.capability,
                 candidates=len(command.candidates))

    def rearm(self, run: Run) -> None:
        """Hold the open questions of a run rebuilt from the journal."""
        for suspension in run.engine.suspensions(run.state):
            self._questions[suspension.token] = (run.run_id, self.expires_at(suspension.since_ms))

    def asked(self, token: str) -> str | None:
        """The id of the run that asks the open question ``token``, or None."""
        found = self._questions.get(token)
        return None if found is None else found[0]

    def questions(self, run: Run) -> list[Question]:
        """The questions ``run`` waits on, as clients see them (none once it ended)."""
        if run.result is not None:
            return []
        suspensions = run.engine.suspensions(run.state)
        if not suspensions:  # the usual run asks nothing: no list to build
            return suspensions
        return [Question(token=s.token, step_id=s.step_id, capability=s.capability, question=s.question,
                         candidates=s.candidates, since_ms=s.since_ms, expires_at_ms=self.expires_at(s.since_ms))
                for s in suspensions]

    def question(self, answer: Any, *, run_id: str | None = None, token: str | None = None) -> tuple[Run, Suspension]:
        """The live run and the open question ``answer`` answers (named by the run, the token
        or both).

        Raises:
            AnswerRefused: when no live run is named, the run asks nothing, the token is stale
                or wrong, several questions are open and no token names one, or the answer is
                none of the candidates (the message never echoes the answer).
        """
        if run_id is None:
            run_id = self.asked(token or "")
            if run_id is None:
                raise AnswerRefused("not_suspended", "no open question has that token (stale, wrong, or answered)")
        run = self._runs.get(run_id)
        if run is None:
            raise AnswerRefused("unknown_run", f"no run {run_id} here")
        asking = [] if run.result is not None else run.engine.suspensions(run.state)
        if not asking:
            raise AnswerRefused("not_suspended", f"run {run_id} asks no question (it is {run.state.status})")
        if token is None:
            if len(asking) > 1:
                raise AnswerRefused("invalid_answer", f"run {run_id} asks {len(asking)} questions: answer one by its token")
            suspension = asking[0]
        else:
            suspension = next((s for s in asking if s.token == token), None)
            if suspension is None:
                raise AnswerRefused("not_suspended", f"run {run_id} asks no question with that token (stale or wrong)")
        refused = check_answer(suspension, answer)
        if refused is not None:
            raise AnswerRefused("invalid_answer", refused)
        return run, suspension

    def answered(self, token: str) -> None:
        """Forget an answered question's expiry."""
        self._questions.pop(token, None)

    def questions_expired(self, now: int) -> list[tuple[Run, str]]:
        """The live runs and tokens of the questions whose expiry is past (each reported once)."""
        if not self._questions:
            return []
        late = [(token, run_id) for token, (run_id, at) in self._questions.items() if at is not None and at <= now]
        found = []
        for token, run_id in late:
            del self._questions[token]
            run = self.live(run_id)
            if run is not None:
                found.append((run, token))
        return found

    def advance(self, run: Run, fact: Fact) -> list[Command]:
        """Apply ``fact`` to ``run`` through its engine; return the engine's commands.

        Raises:
            TypeError: when ``fact`` is not one of the engine's facts.
        """
        state = run.state
        try:
            commands = run.advance(state, fact)
        except Exception as exc:
            if not isinstance(fact, Fact):
                raise  # the caller's mistake (the documented TypeError), not the run's
            return [self._engine_failed(run, fact, exc)]
        # What the fact changed is published here, in line (a step ends at nearly every fact).
        if state.notes:
            if self.log_info:
                for note in state.notes:
                    log.info("engine_note", run_id=state.run_id, note=note)
            state.notes.clear()
        trace = state.trace
        if run.logged != len(trace):
            logged, run.logged = run.logged, len(trace)
            if self.log_info or self.on_progress:  # no slice when nobody reads it (no info log, no watcher)
                fresh = trace[logged:]
                if self.log_info:
                    _log_steps(state.run_id, fresh)
                for callback in self.on_progress:
                    try:
                        callback(state.run_id, fresh)
                    except Exception as exc:  # a watcher's bug must not break the run
                        log.error("progress_callback_failed", run_id=state.run_id, error=type(exc).__name__,
                                  where=where(exc))
        if state.status == "suspended":  # nothing more happens until a person answers
            for callback in self.on_suspended:
                try:
                    callback(run)
                except Exception as exc:  # an observer's bug must not break the run
                    log.error("suspended_callback_failed", run_id=state.run_id, error=type(exc).__name__,
                              where=where(exc))
        return commands

    def _engine_failed(self, run: Run, fact: Fact, exc: Exception) -> RunEnded:
        # A bug in an engine fails its run, named; it does not leave it running for ever
        # (its steps still out are ignored when they answer, as any ended run's). The log
        # says where; the run's error says neither the exception's text nor a value.
        state = run.state
        log.error("engine_failed", run_id=state.run_id, fact=type(fact).__name__, error=type(exc).__name__,
                  where=where(exc))
        error = engine_failure(fact, exc)
        # What every engine's state holds of its end (the RunEngine contract), so that a read of
        # the run (show, list) says failed, as its result does.
        state.status, state.error = "failed", error
        if state.ended_ms is None:
            state.ended_ms = fact.now_ms
        return RunEnded(state.run_id, "failed", error)

    def end(self, run: Run, ended: RunEnded) -> RunResult:
        """Record that ``run`` ended as ``ended`` says; publish and return its result."""
        state = run.state
        result = run.result = result_of(state, ended.status, ended.error)
        ended_engine = run.engine = run.engine.ended  # the compiled document is let go (``EndedEngine``)
        run.advance = ended_engine.advance
        self.in_flight -= 1
        if ended.status == "completed":
            if self.log_info:
                log.info("run_completed", run_id=state.run_id, steps=len(state.trace),
                         duration_ms=(state.ended_ms or 0) - (state.started_ms or 0))
        else:
            log.warning("run_failed", run_id=state.run_id, status=ended.status, error=ended.error, steps=len(state.trace))
        self._deadlines.pop(state.run_id, None)
        if self._questions:
            for token in [t for t, (r, _) in self._questions.items() if r == state.run_id]:
                del self._questions[token]
        if run.done is not None:
            run.done.set()
        for callback in self.on_run_ended:
            try:
                callback(result)
            except Exception as exc:  # an observer's bug must not break the run's end
                log.error("run_ended_callback_failed", run_id=state.run_id, error=type(exc).__name__, where=where(exc))
        return result


def _log_steps(run_id: str, entries: list[Any]) -> None:
    for entry in entries:
        log.info("step_completed", run_id=run_id, step_id=entry.step_id, node=entry.node, block=entry.block,
                 capability=entry.capability, outcome=entry.event, attempt=entry.attempt,
                 duration_ms=entry.duration_ms, retries=entry.retries, reason=entry.reason)
        if entry.action is not None:
            log.info("transition_taken", run_id=run_id, block=entry.block, signal=entry.event, action=entry.action)


def result_of(state: Any, status: RunStatusName, error: str | None) -> RunResult:
    """The :class:`RunResult` of an ended run's state."""
    # The trace itself, not a copy: an ended run's state takes no more steps (``admit``).
    # run_id, status, error, context, trace, started_ms, ended_ms: positional (once per run)
    return RunResult(state.run_id, status, error, state.context, state.trace, state.started_ms, state.ended_ms)
