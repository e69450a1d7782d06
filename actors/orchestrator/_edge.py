"""The daemon's edge: a sentence in, its plan run on this orchestrator, one answer out.

Seed 004's Entry for the client API (``Ask``) and the HTTP entry alike: both call
:meth:`EdgeService.ask`, so every channel takes the same path. The Entry lives where the
channels are, on the orchestrator's loop, and talks by messages (``protocols.edge``, over the
kernel's in-memory mailboxes) to the edge's two actors, which it supervises: the Planner actor
(``actors.intent.PlannerActor``: session memory, the confidence gate, the resolver, the
planner) and the Intent actor (``actors.intent.IntentActor``: the adapter). The planner
answers with a plan or a clarification; a plan is compiled against the capabilities the
workers announced and submitted to the orchestrator like any client's plan (journaled when
the daemon has a journal), then read back as one ``DomainOutput`` (``answer_of``).

The intent adapter's answer travels in the run's inputs under :data:`INTENT_KEY`: with a
journal it is committed with the run's submission, before any step is dispatched, so recovery
and replay read it and never ask the adapter again. The turn the planner remembers for a
follow-up is recorded before it answers, so it is in that same commit. A clarification asked
before anything ran (the confidence gate, a missing entity) starts no run and is not journaled.

Session memory (earlier turns, the question a session was asked, the gate's choice of goal)
is a :class:`SessionBook` the planner owns, bounded by ``MemoryLimits`` and kept in the journal
when the daemon has one, so follow-ups and answers work across a restart. A reply may name a
candidate loosely (``actors.intent.choose``). One session's turns are taken one at a time.

A turn whose caller goes away (the HTTP entry cancels :meth:`EdgeService.ask` when its client
closes the connection) is withdrawn: the adapter's call for it is cancelled (``AskWithdrawn``:
no further model call), and the run it waits on is cancelled as ``ontoflow cancel`` does.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from functools import partial
from typing import Any

import anyio
import msgspec
import structlog

from ontoflow.actors.intent import (
    ENTRY,
    PLANNER,
    RUN_FLAG,
    Catalogue,
    EdgeWire,
    IntentActor,
    IntentAdapter,
    IntentRejected,
    PlannerActor,
    answer_of,
    choose,
    says_cancel,
)
from ontoflow.actors.orchestrator._clients import ClientService
from ontoflow.actors.orchestrator._domains import DomainBook
from ontoflow.actors.orchestrator._edge_answers import answer_text, client_session, question_output, reply_of
from ontoflow.actors.orchestrator._edge_runs import RunWaits
from ontoflow.actors.orchestrator._mailbox import key_of
from ontoflow.actors.orchestrator._orchestrator import Orchestrator, UnknownRunError
from ontoflow.actors.orchestrator._run_table import AnswerRefused
from ontoflow.actors.orchestrator._runners import Runners
from ontoflow.actors.orchestrator._sessions import SessionBook
from ontoflow.actors.pipelines import ConnectionResolutionError
from ontoflow.protocols.client import Ask, AskReply, Busy, Error
from ontoflow.protocols.domain import DomainOutput
from ontoflow.protocols.edge import AskWithdrawn, PlanAsk, SessionAnswered, SessionAsked
from ontoflow.protocols.errors import ManifestError
from ontoflow.protocols.intent import EntryRequest, check_entry
from ontoflow.runtime.actor import ChildSpec, Supervisor, where
from ontoflow.runtime.errors import ConfigError, RestartIntensityExceeded

__all__ = ["INTENT_KEY", "EdgeService", "answer_text", "question_output"]

log = structlog.get_logger()

_NO_DOMAINS = ("this daemon knows no domain yet: start it with --domains DIR or --domains-file FILE, or start a worker "
               "with --domain DIR or --http-domain URL")

#: The run input holding what the intent adapter understood (journaled with the submission).
INTENT_KEY = "ontoflow.intent"


class EdgeService:
    """The Entry of one orchestrator's edge; ``compose_orchestrator`` wires it in.

    It lives where the channels are (the client service hands it each ``Ask`` through
    :meth:`handle`; the HTTP entry awaits :meth:`ask`) and talks to the edge's actors by
    messages (``protocols.edge``, over the kernel's in-memory mailboxes): the
    :class:`~actors.intent.PlannerActor` (gate, resolver, planner, session memory) and the
    :class:`~actors.intent.IntentActor` (the adapter). Start :meth:`run` in the daemon's task
    group: it supervises both (``runtime.actor.Supervisor``, one_for_one: a crashed one is
    restarted, the asks it held get an ``internal`` error, and the orchestrator serves plain
    submits meanwhile) and hosts one task per ``Ask``.

    Args:
        orchestrator: where the plans run.
        clients: compiles plans (its cache, limits and drain state) as a client's submit.
        catalogue: the domains loaded at start (None: those of ``domains`` only).
        domains: the daemon's domain book: when given, each sentence is understood against
            its current catalogue (expected, journaled and worker-announced domains).
        clock: "now" in milliseconds (the orchestrator's clock).
        wire, intent, planner: the edge's mailboxes and actors, built by ``compose_edge``
            (``_compose.py``), the one place they are made.
        max_restarts, within_s: the supervisor's restart intensity.
    """

    def __init__(
        self,
        orchestrator: Orchestrator,
        clients: ClientService,
        catalogue: Catalogue | None,
        *,
        wire: EdgeWire,
        intent: IntentActor,
        planner: PlannerActor,
        clock: Callable[[], int] | None = None,
        domains: DomainBook | None = None,
        max_restarts: int = 5,
        within_s: float = 10.0,
    ) -> None:
        self._orch = orchestrator
        self._clients = clients
        self._static = catalogue if catalogue is not None else Catalogue([], {})
        self._domains = domains
        self._clock = clock if clock is not None else orchestrator.now
        self._wire = wire
        self.planner = planner
        self.intent = intent
        self._wire.route(ENTRY, self._answer)
        self._send = self._wire.sink(ENTRY).send_many
        self._supervisor = Supervisor([ChildSpec("intent", partial(self._child, self.intent)),
                                       ChildSpec("planner", partial(self._child, self.planner))],
                                      max_restarts=max_restarts, within_s=within_s, name="edge")
        self._locks: dict[str, anyio.Lock] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self._stopped = False  # run() ended: an Ask is refused shutting_down, not unavailable (not yet up)
        self._runners: Runners[tuple[bytes, Ask]] = Runners(self._reply)
        self._down = False
        self._ask_ids = itertools.count(1)
        self._waiting: dict[int, tuple[anyio.Event, list[Any]]] = {}  # ask id -> (its event, its answer)
        self._runs = RunWaits(orchestrator)  # the turns waiting on their runs

    @property
    def sessions(self) -> SessionBook:
        """The session book (the planner's)."""
        return self.planner.sessions  # type: ignore[return-value]

    def catalogue_now(self) -> Catalogue:
        """The catalogue to understand a sentence against (the same object while unchanged)."""
        return self._domains.catalogue(self._clock()) if self._domains is not None else self._static

    def run_suspended(self, run: Any) -> None:
        """A run now asks a question (``RunTable.on_suspended``): the turn waiting on it answers
        the question at once instead of waiting for the run's end (``RunWaits``)."""
        self._runs.run_suspended(run)

    async def run(self, *, task_status: anyio.abc.TaskStatus = anyio.TASK_STATUS_IGNORED) -> None:
        """Supervise the edge's actors and host the tasks answering ``Ask`` requests until cancelled."""
        async with anyio.create_task_group() as tg:
            await tg.start(self._supervise)
            self._tg = tg
            task_status.started()
            try:
                await anyio.sleep_forever()
            finally:
                self._tg = None  # the task group's cancellation stops the supervisor and its actors
                self._stopped = True

    async def _supervise(self, *, task_status: anyio.abc.TaskStatus = anyio.TASK_STATUS_IGNORED) -> None:
        try:
            await self._supervisor.run(task_status=task_status)
        except RestartIntensityExceeded:
            # The edge is down for good; the orchestrator goes on serving runs.
            log.error("edge_down", reason="restart_intensity_exceeded")
            self._down = True
            self._fail_waiting()

    async def _child(self, actor: IntentActor | PlannerActor) -> None:
        try:
            await actor.serve()
        except Exception:
            # What it held is lost: the asks waiting on the edge get an error now, not never.
            failed = self._fail_waiting()
            abandoned = self.planner.abandon()
            log.error("edge_actor_crashed", actor=type(actor).__name__, asks_failed=failed, asks_abandoned=abandoned)
            raise

    def _fail_waiting(self) -> int:
        waiting, self._waiting = self._waiting, {}
        for event, slot in waiting.values():
            slot.append(None)
            event.set()
        return len(waiting)

    def _answer(self, sender: bytes, message: Any) -> None:
        """An edge actor's answer (the wire hands it here at once): wake the ask waiting on it."""
        waiting = self._waiting.pop(message.ask_id, None)
        if waiting is not None:
            waiting[1].append(message)
            waiting[0].set()

    async def _request(self, message: Any) -> Any:
        """Send ``message`` (with a fresh ``ask_id``) to the planner and wait for its answer;
        None when an edge actor crashed meanwhile or the edge is down."""
        if self._down or self._tg is None:
            return None
        ask_id = next(self._ask_ids)
        event, slot = anyio.Event(), []
        self._waiting[ask_id] = (event, slot)
        self._send([(PLANNER, msgspec.structs.replace(message, ask_id=ask_id))])
        try:
            await event.wait()
        except anyio.get_cancelled_exc_class():  # the caller went away: its adapter's call too
            if self._waiting.pop(ask_id, None) is not None and isinstance(message, PlanAsk):
                self._send([(PLANNER, AskWithdrawn(ask_id=ask_id))])
            raise
        return slot[0]

    def handle(self, identity: bytes, message: Ask) -> None:
        """Answer ``message`` in a task of the edge's (the orchestrator's receive loop never
        waits): a runner's (``_runners``: a wake-up per ask, not a task started)."""
        if self._tg is None:  # not started yet (retry), or stopped for good
            code = "shutting_down" if self._stopped else "unavailable"
            self._orch.send_client(identity, Error(code=code, message="the daemon's edge is not running"))
            return
        self._runners.hand(self._tg, (identity, message))

    async def _reply(self, job: tuple[bytes, Ask]) -> None:
        identity, message = job
        try:
            reply = await self.ask(message.session_id, message.text, channel=message.channel, run=message.run,
                                   client=key_of(identity))
        except Exception as exc:  # a bug here must not reach the client as a trace
            log.error("ask_failed", error=type(exc).__name__, where=where(exc))
            reply = Error(code="internal", message="the daemon failed to answer (see its log)")
        self._orch.send_client(identity, reply)

    async def ask(self, session_id: str, text: str, *, channel: str = "api", run: bool = False,
                  client: str = "") -> AskReply | Error | Busy:
        """Understand ``text`` in ``session_id``, run its plan and answer (``run``: the channel's
        run flag, ``actors.intent.RUN_FLAG``; ``client``: the asking CURVE key, whose sessions
        are its own, and whose the run is, ``client_session``).

        Cancelling the call withdraws the turn (the module docstring).

        Returns:
            An ``AskReply`` (a refused sentence is a ``failure`` saying why, with
            ``metadata.code == "invalid"``); ``Error``/``Busy`` when the daemon refuses runs
            (draining, at its run limit), or ``Error("internal")`` when the edge's actors
            crashed while they held the sentence.
        """
        request = EntryRequest(session_id=session_id, input_text=text, channel=channel,
                               metadata={RUN_FLAG: True} if run else {})
        if not self.catalogue_now().domains:
            return Error(code="no_domains", message=_NO_DOMAINS)
        problems = check_entry(request)
        if problems:  # checked here too: a refusal needs no actor
            return AskReply(status="failure", explanation=str(IntentRejected(problems)), metadata={"code": "invalid"})
        session_id = client_session(client, session_id)
        request = msgspec.structs.replace(request, session_id=session_id)
        lock = self._locks.get(session_id)
        if lock is None:
            # fast_acquire: a free lock is taken without a trip through the event loop.
            lock = self._locks[session_id] = anyio.Lock(fast_acquire=True)
        try:
            async with lock:  # one session's turns in order: each reads the previous one
                return await self._ask(request, client)
        finally:
            if not lock.locked() and lock.statistics().tasks_waiting == 0:
                self._locks.pop(session_id, None)
            self._commit()

    def conversation_remembered(self, key: str, session_id: str) -> None:
        """The HTTP entry recorded a conversation's session: journaled and committed before its
        answer leaves (a message to the planner was read after, and a kill forgot it)."""
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

    def _understanding(self) -> tuple[Catalogue, IntentAdapter]:
        """The catalogue to understand a sentence against, and the Intent actor's adapter on it."""
        return self.intent.understanding()

    async def _answered(self, request: EntryRequest, run_id: str, answer_steps: tuple[str, ...]) -> AskReply | Error | Busy | None:
        """The session's sentence as the answer to the question its run asked; None when that
        run no longer waits for one (the sentence is then understood afresh)."""
        text = request.input_text.strip()
        try:
            questions = self._orch.questions(run_id)
        except UnknownRunError:  # the run is gone (forgotten, or not recovered): not a question any more
            questions = None
        if questions is None:
            self._forget_question(request.session_id)
            return None
        chosen = next((c for q in questions if (c := choose(text, q.candidates)) is not None), None)
        try:
            self._orch.resume(text if chosen is None else chosen, run_id=run_id)
        except AnswerRefused as exc:
            if exc.code != "invalid_answer":
                self._forget_question(request.session_id)
                return None
            if says_cancel(text):  # "cancel": the person lets the question go (else held in it until it expires)
                return self._let_go(request.session_id, run_id)
            again = question_output(run_id, questions, f"{exc}; answer one of them, or say cancel. ")
            return reply_of(again, run_id, {})
        self._forget_question(request.session_id)
        log.info("ask_answered", run_id=run_id, by_position_or_name=chosen is not None and chosen != text)
        return await self._finish(request.session_id, run_id, answer_steps, {})

    def _let_go(self, sid: str, run_id: str) -> AskReply:
        """Cancel the run whose question the session lets go (it is there: it just refused an answer)."""
        self._orch.cancel(run_id, "the person cancelled its question")
        self._forget_question(sid)
        log.info("ask_question_cancelled", run_id=run_id)
        said = DomainOutput(status="success", explanation="Cancelled: the question is let go, and its run ended.",
                            metadata={"code": "cancelled", "run_id": run_id})
        return reply_of(said, run_id, {})

    def _forget_question(self, sid: str) -> None:
        self._send([(PLANNER, SessionAnswered(session_id=sid))])

    async def _finish(self, sid: str, run_id: str, answer_steps: Any, intent: dict[str, Any]) -> AskReply | Error:
        """Wait for the run's end, or for it to suspend on a question (answered at once, and
        remembered so the session's next sentence answers it); cancelled meanwhile (the caller
        went away), the run is cancelled (``RunWaits``)."""
        done = await self._runs.settled(run_id)
        if done is not None:
            return reply_of(answer_of(done.status, done.error, done.context, answer_steps), run_id, intent)
        with self._runs.withdrawing(run_id):  # recorded (in the journal's batch) before the person reads it
            await self._request(SessionAsked(ask_id=0, session_id=sid, run_id=run_id, answer_steps=list(answer_steps)))
        return reply_of(question_output(run_id, self._orch.questions(run_id)), run_id, intent)

    async def _ask(self, request: EntryRequest, client: str) -> AskReply | Error | Busy:
        answer = await self._request(PlanAsk(ask_id=0, request=request))
        if answer is not None and answer.answering is not None:  # this sentence answers a run's question
            answered = await self._answered(request, answer.answering, tuple(answer.answer_steps))
            if answered is not None:
                return answered
            answer = await self._request(PlanAsk(ask_id=0, request=request))  # understood afresh
        if answer is None:
            return Error(code="internal", message="the daemon's edge failed to answer (see its log); ask again")
        if answer.code == "no_domains":
            return Error(code="no_domains", message=_NO_DOMAINS)
        if answer.rejected:
            return AskReply(status="failure", explanation=answer.rejected, metadata={"code": answer.code})
        intent = msgspec.to_builtins(answer.intent) if answer.intent is not None else {}
        if answer.plan is None:
            clarification = answer.clarification or DomainOutput(status="failure", explanation="nothing to run")
            return reply_of(clarification, None, intent)
        clients = self._clients
        if not clients.accepting:
            return Error(code="shutting_down", message="the daemon is shutting down; ask its successor")
        if clients.max_runs is not None and self._orch.runs_in_flight >= clients.max_runs:
            return Busy(runs_in_flight=self._orch.runs_in_flight, limit=clients.max_runs)
        try:
            workflow, source = clients.compile(msgspec.to_builtins(answer.plan))
        except (ManifestError, ConfigError, ConnectionResolutionError) as exc:
            # Most often: no worker has announced the domain's handlers yet.
            log.warning("ask_plan_refused", domain=intent.get("primary_domain"), goal=intent.get("goal"))
            return reply_of(DomainOutput(status="failure", explanation=f"the plan for this question cannot run here: {exc}",
                                       metadata={"code": "unavailable"}), None, intent)
        owner = client if client and self._orch.authority.roles is not None else None  # as a client's Submit
        with anyio.CancelScope(shield=True):  # a caller gone meanwhile must learn the run id to cancel it
            run_id = await self._orch.asubmit(workflow, {INTENT_KEY: intent}, source=source, owner=owner)
        if owner is not None:
            clients.note_owner(run_id, owner)
        return await self._finish(request.session_id, run_id, tuple(answer.answer_steps), intent)

