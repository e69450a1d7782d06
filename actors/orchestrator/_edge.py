"""The daemon's edge: a sentence in, its plan run on this orchestrator, one answer out.

Seed 004's Entry for the client API (``Ask``) and the HTTP entry alike: both call
:meth:`EdgeService.ask`, so every channel takes the same path. The front half
(``actors.intent.understand``: adapter, gate, resolver, planner) turns the sentence into a plan
or a clarification; a plan is compiled against the capabilities the workers announced and
submitted to the orchestrator like any client's plan (journaled when the daemon has a journal),
then read back as one ``DomainOutput`` (``answer_of``).

The intent adapter's answer travels in the run's inputs under :data:`INTENT_KEY`: with a
journal it is committed with the run's submission, before any step is dispatched, so recovery
and replay read it and never ask the adapter again. A clarification asked before anything ran
(the confidence gate, a missing entity) starts no run and is not journaled.

Session memory (the previous turns of each session, for follow-ups, and the question a session
was asked) is a :class:`SessionBook`, bounded by ``MemoryLimits`` (turns per session, their
age, sessions) and kept in the journal when the daemon has one: a restarted daemon reads it
back, so "e da Vale?" after a restart still leans on "qual o preço da Petrobras?", and the
answer to a question asked before the restart still resumes its run. A reply to a question may
name a candidate loosely ("a segunda", "nda-fi.he", "Helsinki": ``actors.intent.choose``).
One session's turns are taken one at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import msgspec
import structlog

from ontoflow.actors.intent import (
    RUN_FLAG,
    Catalogue,
    IntentAdapter,
    IntentRejected,
    Matcher,
    MemoryLimits,
    answer_of,
    choose,
    understand,
)
from ontoflow.actors.orchestrator._clients import ClientService
from ontoflow.actors.orchestrator._domains import DomainBook
from ontoflow.actors.orchestrator._orchestrator import Orchestrator, UnknownRunError
from ontoflow.actors.orchestrator._run_table import AnswerRefused
from ontoflow.actors.orchestrator._sessions import SessionBook
from ontoflow.actors.pipelines import ConnectionResolutionError
from ontoflow.protocols.client import Ask, AskReply, Busy, Error
from ontoflow.protocols.domain import DomainOutput
from ontoflow.protocols.errors import ManifestError
from ontoflow.protocols.intent import EntryRequest, SessionMemory
from ontoflow.runtime.actor import where
from ontoflow.runtime.errors import ConfigError

__all__ = ["INTENT_KEY", "EdgeService", "answer_text", "question_output"]

log = structlog.get_logger()

#: The run input holding what the intent adapter understood (journaled with the submission).
INTENT_KEY = "ontoflow.intent"


def answer_text(answer: DomainOutput) -> str:
    """What a person reads: the explanation, and a clarification's candidates or missing
    entities, one per line; a result without an explanation as its answers' data."""
    lines = [answer.explanation] if answer.explanation else []
    if answer.status == "clarification":
        for i, c in enumerate(answer.result.get("candidates", []), start=1):
            label = c.get("symbol") or c.get("goal") or c.get("market") or ""
            detail = c.get("name") or c.get("description") or c.get("exchange") or ""
            lines.append(f"  {i}. {label}  {detail}".rstrip())
        for m in answer.result.get("missing", []):
            lines.append(f"  - {m['entity']}: {m['description']}")
    elif not answer.explanation:
        for a in answer.result.get("answers", []):
            lines.append(f"{a['step']} {a['capability']}: {msgspec.json.encode(a['result']).decode()}")
    return "\n".join(lines)


def question_output(run_id: str, questions: list[Any], prefix: str = "") -> DomainOutput:
    """What a suspended run asks (its first question), as the clarification a person reads;
    the daemon's edge and the embedded ``ask``/``chat`` answer it alike."""
    first = questions[0] if questions else None
    text = first.question if first is not None else "the run waits for an answer"
    candidates = list(first.candidates) if first is not None else []
    return DomainOutput(status="clarification", explanation=prefix + text, result={"candidates": candidates},
                        metadata={"run_id": run_id, "suspended": True})


class EdgeService:
    """Answers sentences for one orchestrator; ``compose_orchestrator`` wires it in.

    Start :meth:`run` in the daemon's task group (it hosts one task per ``Ask``); the client
    service hands it each ``Ask`` through :meth:`handle`; the HTTP entry awaits :meth:`ask`.

    Args:
        orchestrator: where the plans run.
        clients: compiles plans (its cache, limits and drain state) as a client's submit.
        catalogue: the domains loaded at start (None: those of ``domains`` only).
        adapter: the intent adapter (default: the deterministic matcher on ``catalogue``).
        domains: the daemon's domain book: when given, each sentence is understood against
            its current catalogue (expected, journaled and worker-announced domains), and the
            default matcher is rebuilt whenever that catalogue changes.
        limits: how much session memory is kept.
        clock: "now" in milliseconds (the orchestrator's clock).
    """

    def __init__(
        self,
        orchestrator: Orchestrator,
        clients: ClientService,
        catalogue: Catalogue | None,
        *,
        adapter: IntentAdapter | None = None,
        limits: MemoryLimits = MemoryLimits(),
        clock: Callable[[], int] | None = None,
        domains: DomainBook | None = None,
    ) -> None:
        self._orch = orchestrator
        self._clients = clients
        self.catalogue = catalogue if catalogue is not None else Catalogue([], {})
        self.adapter = adapter if adapter is not None else Matcher(self.catalogue)
        self._domains = domains
        self._own_matcher = adapter is None
        self._limits = limits
        self._clock = clock if clock is not None else orchestrator.now
        self._locks: dict[str, anyio.Lock] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        #: Each session's turns and the question it was asked (journaled; read back here).
        self.sessions = SessionBook(orchestrator.durability, limits, orchestrator.runs.answer_timeout_ms, self._clock)
        self.sessions.restore()
        # run -> the event a waiting turn wakes on when it suspends.
        self._suspended: dict[str, anyio.Event] = {}

    def run_suspended(self, run: Any) -> None:
        """A run now asks a question (``RunTable.on_suspended``): the turn waiting on it answers
        the question at once instead of waiting for the run's end."""
        event = self._suspended.get(run.run_id)
        if event is not None:
            event.set()

    async def run(self, *, task_status: anyio.abc.TaskStatus = anyio.TASK_STATUS_IGNORED) -> None:
        """Host the tasks answering ``Ask`` requests until cancelled."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            task_status.started()
            try:
                await anyio.sleep_forever()
            finally:
                self._tg = None

    def handle(self, identity: bytes, message: Ask) -> None:
        """Answer ``message`` in its own task (the orchestrator's receive loop never waits)."""
        if self._tg is None:
            self._orch.send_client(identity, Error(code="shutting_down", message="the daemon's edge is not running"))
            return
        self._tg.start_soon(self._reply, identity, message)

    async def _reply(self, identity: bytes, message: Ask) -> None:
        try:
            reply = await self.ask(message.session_id, message.text, channel=message.channel, run=message.run)
        except Exception as exc:  # a bug here must not reach the client as a trace
            log.error("ask_failed", error=type(exc).__name__, where=where(exc))
            reply = Error(code="internal", message="the daemon failed to answer (see its log)")
        self._orch.send_client(identity, reply)

    async def ask(self, session_id: str, text: str, *, channel: str = "api", run: bool = False) -> AskReply | Error | Busy:
        """Understand ``text`` in ``session_id``, run its plan and answer (``run``: the channel's
        run flag, ``actors.intent.RUN_FLAG``).

        Returns:
            An ``AskReply`` (a refused sentence is a ``failure`` saying why, with
            ``metadata.code == "invalid"``); ``Error``/``Busy`` when the daemon refuses runs
            (draining, at its run limit).
        """
        request = EntryRequest(session_id=session_id, input_text=text, channel=channel,
                               metadata={RUN_FLAG: True} if run else {})
        lock = self._locks.get(session_id)
        if lock is None:
            lock = self._locks[session_id] = anyio.Lock()
        try:
            async with lock:  # one session's turns in order: each reads the previous one
                return await self._ask(request)
        finally:
            if not lock.locked() and lock.statistics().tasks_waiting == 0:
                self._locks.pop(session_id, None)
            self._commit()

    def conversation_remembered(self, key: str, session_id: str) -> None:
        """The HTTP entry's book recorded a conversation's session: keep it in the journal."""
        self.sessions.conversation(key, session_id)
        self._commit()

    def _commit(self) -> None:
        """Commit what the sessions recorded now (a reply through the client API would commit it
        before it leaves; the HTTP entry answers on its own). A failed commit is the
        orchestrator's to retry: the records stay in its batch."""
        try:
            self._orch.outbox.commit()
        except Exception as exc:
            log.warning("edge_memory_not_committed", error=type(exc).__name__)

    async def _answered(self, request: EntryRequest, run_id: str, answer_steps: tuple[str, ...]) -> AskReply | Error | Busy | None:
        """The session's sentence as the answer to the question its run asked; None when that
        run no longer waits for one (the sentence is then understood afresh)."""
        text = request.input_text.strip()
        try:
            questions = self._orch.questions(run_id)
        except UnknownRunError:  # the run is gone (forgotten, or not recovered): not a question any more
            questions = None
        if questions is None:
            self.sessions.forget_question(request.session_id)
            return None
        chosen = next((c for q in questions if (c := choose(text, q.candidates)) is not None), None)
        try:
            self._orch.resume(text if chosen is None else chosen, run_id=run_id)
        except AnswerRefused as exc:
            if exc.code != "invalid_answer":
                self.sessions.forget_question(request.session_id)
                return None
            again = self._question(run_id, questions, f"{exc} ")
            return _reply(again, run_id, {})
        self.sessions.forget_question(request.session_id)
        log.info("ask_answered", run_id=run_id, by_position_or_name=chosen is not None and chosen != text)
        return await self._finish(request.session_id, run_id, answer_steps, {})

    def _question(self, run_id: str, questions: list[Any], prefix: str = "") -> DomainOutput:
        return question_output(run_id, questions, prefix)

    async def _finish(self, sid: str, run_id: str, answer_steps: Any, intent: dict[str, Any]) -> AskReply:
        """Wait for the run's end, or for it to suspend on a question (answered at once, and
        remembered so the session's next sentence answers it)."""
        event = self._suspended.setdefault(run_id, anyio.Event())
        result: list[Any] = []
        async with anyio.create_task_group() as tg:
            async def ended() -> None:
                result.append(await self._orch.result(run_id))
                tg.cancel_scope.cancel()

            async def asked() -> None:
                await event.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(ended)
            tg.start_soon(asked)
        self._suspended.pop(run_id, None)
        if not result:
            self.sessions.question(sid, run_id, answer_steps)
            return _reply(self._question(run_id, self._orch.questions(run_id)), run_id, intent)
        done = result[0]
        return _reply(answer_of(done.status, done.error, done.context, answer_steps), run_id, intent)

    async def _ask(self, request: EntryRequest) -> AskReply | Error | Busy:
        sid = request.session_id
        waiting = self.sessions.asked(sid)
        if waiting is not None:  # the session was asked a question: this sentence answers it
            answered = await self._answered(request, *waiting)
            if answered is not None:
                return answered
        turns = self.sessions.turns(sid)
        memory = SessionMemory(sessions={sid: turns} if turns else {})
        catalogue, adapter = self._understanding()
        if not catalogue.domains:
            return Error(code="no_domains", message="this daemon knows no domain yet: start it with --domains DIR or "
                         "--domains-file FILE, or start a worker with --domain DIR or --http-domain URL")
        try:
            understood = await understand(request, catalogue=catalogue, adapter=adapter, memory=memory,
                                          now_ms=self._clock(), limits=self._limits)
        except IntentRejected as exc:
            return AskReply(status="failure", explanation=str(exc), metadata={"code": "invalid"})
        intent = msgspec.to_builtins(understood.intent)
        self.sessions.remember(sid, understood.memory.sessions.get(sid))
        if understood.clarification is not None or understood.planned is None:
            answer = understood.clarification or DomainOutput(status="failure", explanation="nothing to run")
            return _reply(answer, None, intent)
        clients = self._clients
        if not clients.accepting:
            return Error(code="shutting_down", message="the daemon is shutting down; ask its successor")
        if clients.max_runs is not None and self._orch.runs_in_flight >= clients.max_runs:
            return Busy(runs_in_flight=self._orch.runs_in_flight, limit=clients.max_runs)
        planned = understood.planned
        try:
            workflow, source = clients.compile(msgspec.to_builtins(planned.plan))
        except (ManifestError, ConfigError, ConnectionResolutionError) as exc:
            # Most often: no worker has announced the domain's handlers yet.
            log.warning("ask_plan_refused", domain=understood.intent.primary_domain, goal=understood.intent.goal)
            return _reply(DomainOutput(status="failure", explanation=f"the plan for this question cannot run here: {exc}",
                                       metadata={"code": "unavailable"}), None, intent)
        run_id = await self._orch.asubmit(workflow, {INTENT_KEY: intent}, source=source)
        return await self._finish(sid, run_id, planned.answer_steps, intent)

    def _understanding(self) -> tuple[Catalogue, IntentAdapter]:
        """The catalogue to understand a sentence against, and the adapter on it."""
        if self._domains is not None:
            current = self._domains.catalogue(self._clock())
            if current is not self.catalogue:
                self.catalogue = current
                if self._own_matcher:
                    self.adapter = Matcher(current)
        return self.catalogue, self.adapter


def _reply(answer: DomainOutput, run_id: str | None, intent: dict[str, Any]) -> AskReply:
    return AskReply(status=answer.status, explanation=answer.explanation, result=answer.result,
                    confidence=answer.confidence, metadata=answer.metadata, run_id=run_id, intent=intent)
