"""The orchestrator actor: a socket actor that owns a run table, a worker pool and durability.

It owns every run's state and is the only one to touch it: facts arrive (a submission, an
Outcome, a Tick, a lost worker), the pure engine decides, the actor carries out the commands.
On the actor kernel (``runtime.actor.SocketActor``): its mailbox is its ROUTER, drained in
batches; its outbox leaves once per batch behind the journal's commit (:class:`Durability` is
the commit gate). Local calls run on the same event loop, between two socket reads: no lock.

The parts do not know each other's insides: the :class:`RunTable` holds runs and applies facts
through the engine contract; the :class:`WorkerPool` turns worker messages and silences into
facts and commands into messages; :class:`Durability` records and recovers. This class wires
them and routes between them (:meth:`Orchestrator.apply` is the one place a fact is recorded,
decided and carried out). The client and trigger services sit above it, wired by
``compose_orchestrator``.

A journal commit that fails (a full disk) makes the orchestrator *unavailable* until a retry
of it succeeds (the outbox retries with backoff): nothing the failed batch caused is sent, and
nothing new is decided. The messages that would record a fact (Outcome, Ready, Disconnect,
Observation) are parked, in arrival order and bounded (:class:`ParkingLot`), and handled first
once the commit succeeded; Ticks
decide nothing (only heartbeats go out, so workers stay connected; deadlines are looked at
again by the first Tick after); clients' reads are answered, from committed state for a run
the held batch touches, and their writes are refused ``unavailable`` (``ClientService``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, get_args

import anyio
import structlog

from ontoflow.actors.orchestrator._authority import Authority
from ontoflow.actors.orchestrator._durability import Durability, RecoveryReport
from ontoflow.actors.orchestrator._ids import new_run_id
from ontoflow.actors.orchestrator._parking import ParkingLot
from ontoflow.actors.orchestrator._registry import WorkerRegistry
from ontoflow.actors.orchestrator._results import RunResult
from ontoflow.actors.orchestrator._run_table import DEFAULT_ANSWER_TIMEOUT_MS, AnswerRefused, Run, RunTable
from ontoflow.actors.orchestrator._worker_pool import WorkerPool
from ontoflow.actors.orchestrator.engine import (
    CancelStep,
    Dispatch,
    Fact,
    RunCancelled,
    RunEnded,
    RunEngine,
    RunExpired,
    RunResumed,
    RunSubmitted,
    Suspended,
)
from ontoflow.protocols.client import ClientMessage, Error, Question
from ontoflow.protocols.messages import Disconnect, Heartbeat, Invoke, Observation, Outcome, Ready
from ontoflow.runtime.actor import SocketActor, Tick, wall_clock_ms
from ontoflow.runtime.batching import SEND_CHUNK
from ontoflow.runtime.curve import CurveServer
from ontoflow.runtime.journal import FactRow, Journal, JournalError, RunRow
from ontoflow.runtime.transport import DEFAULT_MAX_MESSAGE_BYTES

__all__ = ["AnswerRefused", "Orchestrator", "UnknownRunError", "wall_clock_ms"]

log = structlog.get_logger()

_CLIENT_TYPES = get_args(ClientMessage)


class UnknownRunError(KeyError):
    """Raised when a run id names no run this orchestrator knows."""




class Orchestrator(SocketActor):
    """Routes every run through its engine and every step to a live worker.

    Args:
        address: where to bind the ROUTER (``inproc://``, ``ipc://`` or ``tcp://``).
        context: the zmq context (``inproc://`` needs the workers' one).
        heartbeat_ms: interval announced to workers; a worker silent for ``liveness``
            intervals is dead and its in-flight steps are lost.
        schedule_to_start_ms: how long a step may wait for a worker offering its capability
            before it ends with ``unavailable``.
        tick_ms: resolution of deadlines and liveness checks.
        clock: returns "now" in milliseconds; the only clock the orchestrator reads.
        curve: serve CURVE (the ZAP authenticator must run on ``context``).
        insecure: allow a non-loopback address without CURVE (logged as a warning).
        max_message_bytes: a peer sending a bigger message is disconnected by the socket.
        journal: an open journal: runs submitted with a source are journaled (group commit)
            and the unfinished ones are recovered when ``run`` starts. ``None``: in memory only.
        connections: connection name -> value, for the ``@name`` connections of pipelines
            (compiled at submit and at recovery; ``ONTOFLOW_CONNECTION_<NAME>`` otherwise).
            Never journaled.
        max_value_bytes: the largest encoded value a step output may put in the context; a
            bigger one ends its step ``failure`` with the reason ``output_too_large``.
            ``None``: no limit.
        answer_timeout_ms: how long a suspended run's question waits for an answer before the
            run ends ``expired``; ``None``: forever.
        roles: CURVE public key (z85) -> its roles (``_authority``: ``worker``, ``client``,
            ``admin``); every message is checked against its sender's key. ``None``: roles
            are not enforced (no CURVE).

    Attributes:
        client_handler: called as ``handler(identity, message)`` for each client API message
            (``protocols.client``); without one they are logged and dropped. Replies go out
            with ``send_client``. Set by ``compose_orchestrator``.
        on_observation: called with each Observation a worker reports (triggers).
        recovery: what the start from the journal found, once started with one.

    Late answers: an Outcome is applied only when its attempt is in flight on the worker that
    sends it; any other (an attempt re-dispatched after its worker was lost, cancelled and
    already answered, or answered twice across a reconnect) is logged as ``outcome_ignored``.
    """

    def __init__(
        self,
        *,
        address: str,
        context: Any = None,
        heartbeat_ms: int = 1000,
        liveness: int = 3,
        schedule_to_start_ms: int = 30_000,
        tick_ms: int = 50,
        clock: Callable[[], int] = wall_clock_ms,
        curve: CurveServer | None = None,
        insecure: bool = False,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        journal: Journal | None = None,
        connections: Mapping[str, Any] | None = None,
        max_value_bytes: int | None = None,
        answer_timeout_ms: int | None = DEFAULT_ANSWER_TIMEOUT_MS,
        roles: Mapping[str, frozenset[str]] | None = None,
    ) -> None:
        if heartbeat_ms < 1 or liveness < 1 or schedule_to_start_ms < 0 or tick_ms < 1:
            raise ValueError("heartbeat_ms, liveness and tick_ms must be >= 1, schedule_to_start_ms >= 0")
        self.durability = Durability(journal, connections)
        if answer_timeout_ms is not None and answer_timeout_ms < 1:
            raise ValueError("answer_timeout_ms must be >= 1 (or None: forever)")
        self.runs = RunTable(answer_timeout_ms=answer_timeout_ms)
        self.pool = WorkerPool(
            runs=self.runs, send=self.send, deliver=self.apply,
            record_dispatch=self.durability.dispatched if journal is not None else None,
            heartbeat_ms=heartbeat_ms, liveness=liveness, schedule_to_start_ms=schedule_to_start_ms,
            max_value_bytes=max_value_bytes,
            record_capabilities=self.durability.capabilities_seen if journal is not None else None,
        )
        super().__init__(address=address, context=context, tick_ms=tick_ms, clock=clock,
                         gate=self.durability if journal is not None else None, curve=curve, insecure=insecure,
                         max_message_bytes=max_message_bytes)
        self.client_handler: Callable[[bytes, Any], None] | None = None
        self.on_observation: list[Callable[[Observation], None]] = []
        #: Called with the time at each tick (the client service's lease on held requests).
        self.on_tick: list[Callable[[int], None]] = []
        self.recovery: RecoveryReport | None = None
        self.parking = ParkingLot()
        self._heartbeat_at = 0
        self.authority = Authority(roles)

    # -- what other code reads ---------------------------------------------------------------

    @property
    def journal(self) -> Journal | None:
        """The open journal, or None."""
        return self.durability.journal

    @property
    def connections(self) -> dict[str, Any]:
        """Connection name -> value, for pipelines' ``@name`` connections."""
        return self.durability.connections

    @property
    def registry(self) -> WorkerRegistry:
        """The live workers."""
        return self.pool.registry

    @property
    def runs_in_flight(self) -> int:
        """Runs started and not ended."""
        return self.runs.in_flight

    @property
    def on_run_ended(self) -> list[Callable[[RunResult], None]]:
        """Called with each run's RunResult when it ends (the daemon answers waiting clients)."""
        return self.runs.on_run_ended

    @property
    def on_progress(self) -> list[Callable[[str, list[Any]], None]]:
        """Called as ``callback(run_id, trace_entries)`` when steps of a run end (watchers)."""
        return self.runs.on_progress

    @property
    def available(self) -> bool:
        """False while a failed journal commit waits for its retry (see the module docstring)."""
        return self.outbox.available

    def uncommitted(self, run_id: str) -> bool:
        """Whether the memory of ``run_id`` is ahead of the journal (records of it wait for a
        commit that failed): a read must then answer from the journal."""
        return not self.outbox.available and self.durability.uncommitted(run_id)

    def steps_in_flight(self) -> int:
        """Attempts sent to workers and not answered yet."""
        return self.pool.steps_in_flight()

    def statistics(self) -> dict[str, int]:
        """Counts for observability: runs in flight, workers, steps waiting for a worker."""
        return {"runs_in_flight": self.runs.in_flight, **self.pool.statistics(), **self.parking.statistics()}

    # -- lifecycle ---------------------------------------------------------------------------

    def on_start(self, now: int) -> None:
        """Recover the journal's unfinished runs (their sends leave with the first flush)."""
        log.info("orchestrator_started", address=self.address, journal=self.journal is not None)
        if self.journal is not None:
            self.recovery = self.recover(now)

    def on_stop(self) -> None:
        """Log the stop (the kernel's last flush then records and sends what was decided)."""
        log.info("orchestrator_stopped", runs_in_flight=self.runs.in_flight)

    def recover(self, now: int) -> RecoveryReport:
        """Replay the journal's unfinished runs and go on with them (``run`` does it once).

        Raises:
            runtime.journal.JournalError: when the journal cannot be read.
        """
        with self.outbox.holding():
            self.pool.registry.know(self.durability.catalogue())  # journaled already: not recorded again
            report = self.durability.recover(now, adopt=self._adopt, lost=self.apply, dispatch=self.pool.dispatch,
                                             await_worker=self.pool.await_worker)
        self.outbox.flush()
        return report

    async def drain(self, grace_s: float) -> int:
        """Stop sending new steps and wait (at most ``grace_s``) for the running ones to answer.

        Returns:
            How many attempts were still running when the grace period ended (0: drained).
        """
        self.pool.draining = True
        log.info("orchestrator_draining", steps_in_flight=self.steps_in_flight(), grace_s=grace_s)
        with anyio.move_on_after(grace_s):
            while self.steps_in_flight():
                await anyio.sleep(self._tick_s)  # re-checked each tick: answers arrive on the socket
        left = self.steps_in_flight()
        self.outbox.flush()
        return left

    # -- the mailbox -------------------------------------------------------------------------

    def receive(self, identity: bytes, message: Any, now: int) -> None:
        """Dispatch one message on its type (the kernel calls it for each of a batch)."""
        if self.authority.roles is not None and not self.authority.permitted(identity, message):
            if isinstance(message, _CLIENT_TYPES):
                self.send_client(identity, Error(code="forbidden", message=f"this key may not send {type(message).__name__}"))
            return
        if self.parking or not self.outbox.available:
            if not self.outbox.available:
                self._unavailable(identity, message, now)
                return
            for peer, held in self.parking.take():  # first, in the order they came
                self.receive(peer, held, now)
        match message:
            case Outcome():  # the hot path: most of what arrives
                self.pool.outcome(identity, message, now)
            case Tick(now_ms=tick_now):
                self.pool.tick(tick_now)
                for callback in self.on_tick:
                    callback(tick_now)
                for run in self.runs.expired(tick_now):
                    log.warning("run_deadline_expired", run_id=run.run_id)
                    self.apply(run, RunCancelled(reason="run deadline expired", now_ms=tick_now))
                for run, token in self.runs.questions_expired(tick_now):
                    log.warning("run_question_expired", run_id=run.run_id)
                    self.apply(run, RunExpired(token=token, now_ms=tick_now))
                self._resize_chunk()
            case Heartbeat(session=session):
                if self.pool.seen(identity, now, session) is None:
                    log.warning("heartbeat_from_unknown_peer", peer=identity.hex())
            case Ready():
                self.pool.seen(identity, now)
                self.pool.ready(identity, message, now)
                self._resize_chunk()
            case Disconnect(reason=reason, session=session):
                self.pool.disconnected(identity, reason, now, session)
                self._resize_chunk()
            case Observation():
                if not self.authority.observation_ok(self.pool.seen(identity, now, message.session), message):
                    return
                log.info("observation_received", capability=message.capability, kind=message.kind, id=message.id)
                for callback in self.on_observation:
                    callback(message)
            case _ if isinstance(message, _CLIENT_TYPES):  # a daemon's SubmitRequest is a Submit
                if self.client_handler is None:
                    log.warning("client_request_unserved", peer=identity.hex(), op=type(message).__name__)
                else:
                    self.client_handler(identity, message)
            case _:
                log.warning("message_unexpected", peer=identity.hex(), op=type(message).__name__)

    def _unavailable(self, identity: bytes, message: Any, now: int) -> None:
        """Serve while the journal cannot be written: decide nothing (see the module docstring)."""
        match message:
            case Tick():
                if now - self._heartbeat_at >= self.pool.heartbeat_ms:  # workers must not think us gone
                    self._heartbeat_at = now
                    for worker in list(self.pool.registry):
                        self.outbox.bypass(worker.identity, Heartbeat())
            case Heartbeat():
                self.pool.seen(identity, now)
            case _ if isinstance(message, _CLIENT_TYPES) and self.client_handler is not None:
                self.client_handler(identity, message)  # reads answered, writes refused
            case _:
                self.pool.seen(identity, now)
                self.parking.park(identity, message, self._in_flight_on)

    def _in_flight_on(self, run_id: str, step_id: str, attempt: int) -> bytes | None:
        owner = self.pool.registry.owner(run_id, step_id, attempt)
        return None if owner is None else owner.identity

    def undelivered(self, identity: bytes, messages: list[Any]) -> None:
        """Invokes the ROUTER refused never reached their worker (see ``WorkerPool.undelivered``)."""
        self.pool.undelivered(identity, [m for m in messages if isinstance(m, Invoke)])

    def send_client(self, identity: bytes, message: Any) -> None:
        """Send a client reply after the batch's commit; while unavailable, at once (it then
        answers a read or refuses a write: it tells nothing the journal could lose)."""
        if self.outbox.available:
            self.outbox.put_client(identity, message)
        else:
            self.outbox.bypass(identity, message, client=True)

    def refresh_log_levels(self) -> None:
        """Read the log levels once per batch and hand them to the parts."""
        super().refresh_log_levels()
        self.runs.log_info = self.log_info
        self.pool.log_debug = self.log_debug

    def _resize_chunk(self) -> None:
        # Without a journal, a long batch's sends start leaving after SEND_CHUNK per worker.
        self.outbox.chunk = SEND_CHUNK * max(len(self.pool.registry), 1)

    # -- facts -------------------------------------------------------------------------------

    def apply(self, run: Run, fact: Fact) -> None:
        """Record ``fact`` (journaled runs), apply it through the run's engine, carry out the
        commands: the one place a fact becomes consequences."""
        if run.source_hash is not None:
            # Journaled before its consequences are sent: the batch commits, then the outbox goes.
            self.durability.fact(run.state.run_id, fact)
        for command in self.runs.advance(run, fact):
            match command:
                case Dispatch():
                    self.pool.dispatch(command, fact.now_ms)
                case CancelStep(run_id=run_id, step_id=step_id, attempt=attempt):
                    self.pool.cancel_step(run_id, step_id, attempt)
                case RunEnded():
                    self.runs.end(run, command)
                    if run.source_hash is not None:
                        self.durability.ended(run.state.run_id, command.status, run.state.ended_ms or 0)
                case Suspended():
                    self.runs.suspended(run, command)

    def _adopt(self, run: Run, row: RunRow) -> None:
        self.runs.add(run, deadline_at_ms=row.deadline_at_ms, idempotency_key=row.idempotency_key,
                      trigger_key=row.trigger_key)
        self.runs.rearm(run)

    # -- questions ---------------------------------------------------------------------------

    def questions(self, run_id: str) -> list[Question]:
        """The questions a live run waits on (empty for a run that asks nothing).

        Raises:
            UnknownRunError: when the run is not in memory.
        """
        return self.runs.questions(self._run(run_id))

    def resume(self, answer: Any, *, run_id: str | None = None, token: str | None = None) -> str:
        """Answer a suspended run's question and resume it (``RunResumed``, journaled first);
        returns the run id. ``run_id`` is enough when the run asks one question, ``token`` alone
        always is.

        Raises:
            AnswerRefused: as ``RunTable.question`` says (its ``code`` is the client API's).
        """
        run, suspension = self.runs.question(answer, run_id=run_id, token=token)
        self.apply(run, RunResumed(token=suspension.token, answer=answer, now_ms=self._clock()))
        self.runs.answered(suspension.token)
        self.outbox.commit()
        return run.run_id

    # -- the client side ---------------------------------------------------------------------

    def submit(
        self,
        workflow: RunEngine,
        inputs: Mapping[str, Any],
        *,
        run_id: str | None = None,
        deadline_ms: int | None = None,
        source: tuple[str, bytes] | None = None,
        idempotency_key: str | None = None,
        trigger_key: str | None = None,
        owner: str | None = None,
    ) -> str:
        """Start a run of ``workflow`` with ``inputs`` in its context; returns the run id.

        Args:
            workflow: a compiled workflow or plan (any ``RunEngine``).
            deadline_ms: the run's whole budget; past it the run is cancelled (its running
                step is sent Cancel) and ends ``cancelled``. ``None`` for no limit.
            source: ``(hash, bytes)`` of the workflow's pinned source
                (``actors.orchestrator.encode_source``): with a journal, the run is journaled
                and survives a crash; without a source it lives in memory only.
            idempotency_key: a later submit with the same key gets this run (``find_run``).
            trigger_key: the observation that started the run (same use).
            owner: the client key that submitted it (roles enforced), journaled with the run.

        Raises:
            ValueError: when ``run_id`` names a run this orchestrator already has, or
                ``deadline_ms`` is not positive.
            runtime.journal.JournalError: when the journal is unavailable (nothing is started),
                or when this submission's commit fails (it is kept and committed by the retry).
        """
        journaled = source is not None and self.durability.journal is not None
        if not self.outbox.available:
            raise JournalError(f"journal unavailable ({self.outbox.error}); retry later")
        if run_id is None:
            run_id = new_run_id()  # fresh: no need to ask the journal whether it exists
        elif run_id in self.runs or (journaled and self.durability.exists(run_id)):
            raise ValueError(f"run {run_id} exists already")
        if deadline_ms is not None and deadline_ms < 1:
            raise ValueError("deadline_ms must be >= 1")
        now = self._clock()
        run = Run(workflow, run_id, source[0] if journaled and source is not None else None)
        deadline_at = None if deadline_ms is None else now + deadline_ms
        self.runs.add(run, deadline_at_ms=deadline_at, idempotency_key=idempotency_key, trigger_key=trigger_key)
        name = workflow.name or ""
        if journaled and source is not None:
            self.durability.submitted(RunRow(
                run_id=run_id, source_hash=source[0], submitted_ms=now, deadline_at_ms=deadline_at,
                idempotency_key=idempotency_key, trigger_key=trigger_key, name=name, owner=owner), source)
        if self.log_info:
            log.info("run_submitted", run_id=run_id, workflow=name, input_keys=sorted(inputs), journaled=journaled)
        self.apply(run, RunSubmitted(run_id=run_id, inputs=dict(inputs), now_ms=now))
        self.outbox.commit()
        return run_id

    async def asubmit(self, workflow: RunEngine, inputs: Mapping[str, Any], **options: Any) -> str:
        """``submit``, but the callers of one event-loop turn share one commit (group commit).

        Returns only once the submission is committed, like ``submit``: the acknowledgement
        still follows the commit. Without a journal it is ``submit``.

        Raises:
            The errors of ``submit``. A shared commit that fails is retried and waited for.
        """
        if self.durability.journal is None:
            return self.submit(workflow, inputs, **options)
        with self.outbox.holding():  # the group's commit takes this submission too
            run_id = self.submit(workflow, inputs, **options)
        await self.outbox.committed()
        return run_id

    async def result(self, run_id: str) -> RunResult:
        """Wait for the run to end and return its result.

        Raises:
            UnknownRunError: when no such run was submitted here.
        """
        return await self._run(run_id).wait()

    def status(self, run_id: str) -> RunResult | None:
        """The result of an ended run, or None while it runs.

        Raises:
            UnknownRunError: when no such run is known here (never submitted, or forgotten).
        """
        return self._run(run_id).result

    def run_state(self, run_id: str) -> Any:
        """The live engine state of a run held in memory (read it, never change it).

        Raises:
            UnknownRunError: when the run is not in memory.
        """
        return self._run(run_id).state

    def forget(self, run_id: str) -> None:
        """Drop a finished run's result (a long-running process would otherwise keep them all)."""
        self.runs.forget(run_id)

    def cancel(self, run_id: str, reason: str = "cancelled by request") -> None:
        """Cancel a run: its running step is sent a Cancel and the run ends ``cancelled``.

        Raises:
            UnknownRunError: when no such run was submitted here.
            runtime.journal.JournalError: when the journal is unavailable (nothing changes).
        """
        run = self._run(run_id)
        if run.result is None:
            if not self.outbox.available:
                raise JournalError(f"journal unavailable ({self.outbox.error}); retry later")
            self.apply(run, RunCancelled(reason=reason, now_ms=self._clock()))
            self.outbox.commit()

    def find_run(self, *, idempotency_key: str | None = None, trigger_key: str | None = None) -> str | None:
        """The run id submitted with ``idempotency_key`` (or started for ``trigger_key``), or None."""
        found = self.runs.find(idempotency_key=idempotency_key, trigger_key=trigger_key)
        if found is None:
            found = self.durability.find(idempotency_key=idempotency_key, trigger_key=trigger_key)
        return found

    def replay(self, row: RunRow, facts: list[FactRow], workflows: dict[str, Any]) -> Run:
        """Rebuild one run from its journaled rows through the pure engine (no I/O, no sends).

        Raises:
            runtime.journal.JournalError: when its pinned source is missing from the journal.
        """
        return self.durability.replay(row, facts, workflows)

    async def wait_for_capabilities(self, capability_ids: Iterable[str]) -> None:
        """Return once live workers offer every capability in ``capability_ids``."""
        wanted = set(capability_ids)
        await self.pool.wait_for(lambda registry: all(registry.offers(c) for c in wanted))

    async def wait_for_workers(self, count: int) -> None:
        """Return once at least ``count`` live workers are registered."""
        await self.pool.wait_for(lambda registry: len(registry) >= count)

    def _run(self, run_id: str) -> Run:
        run = self.runs.get(run_id)
        if run is None:
            raise UnknownRunError(run_id)
        return run
