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

Each message is dispatched on its type by the :class:`Mailbox` (``_mailbox``), which also
serves while a failed journal commit waits for its retry (the orchestrator is *unavailable*
then: nothing new is decided, messages that would record a fact are parked). Code on the same
loop starts, cancels and answers runs through :class:`RunCommands` (``_run_commands``); the
methods of the same names here hand their calls to it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import anyio
import structlog

from ontoflow.actors.orchestrator._artifacts import ArtifactReader
from ontoflow.actors.orchestrator._durability import Durability, RecoveryReport
from ontoflow.actors.orchestrator._mailbox import Authority, Mailbox
from ontoflow.actors.orchestrator._registry import WorkerRegistry
from ontoflow.actors.orchestrator._results import RunResult
from ontoflow.actors.orchestrator._run_commands import RunCommands, UnknownRunError
from ontoflow.actors.orchestrator._run_table import DEFAULT_ANSWER_TIMEOUT_MS, AnswerRefused, Run, RunTable
from ontoflow.actors.orchestrator._worker_pool import WorkerPool
from ontoflow.actors.orchestrator.engine import (
    CancelStep,
    Dispatch,
    Fact,
    RunEnded,
    RunEngine,
    Suspended,
)
from ontoflow.protocols.client import Question
from ontoflow.protocols.messages import MAX_HEARTBEAT_MS, MAX_LIVENESS, Invoke, Observation
from ontoflow.runtime.actor import SocketActor, wall_clock_ms
from ontoflow.runtime.curve import CurveServer
from ontoflow.runtime.journal import FactRow, Journal, RunRow
from ontoflow.runtime.transport import DEFAULT_MAX_MESSAGE_BYTES, TooLarge

__all__ = ["AnswerRefused", "Orchestrator", "UnknownRunError", "wall_clock_ms"]

log = structlog.get_logger()

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
        roles: CURVE public key (z85) -> its roles (``_mailbox.Authority``: ``worker``, ``client``,
            ``admin``); every message is checked against its sender's key. ``None``: roles
            are not enforced (no CURVE).
        artifact_roots: the folders a run's worktree must lie in for its artifacts to be read
            (``_artifacts.ArtifactReader``); ``None``: any (the submitters are this user).

    Attributes:
        client_handler: called as ``handler(identity, message)`` for each client API message
            (``protocols.client``); without one they are logged and dropped. Replies go out
            with ``send_client``. Set by ``compose_orchestrator``.
        on_observation: called with each Observation a worker reports (triggers).
        recovery: what the start from the journal found, once started with one.
        mailbox: dispatches each message received (``_mailbox.Mailbox``).
        commands: starts, cancels and resumes runs (``_run_commands.RunCommands``).

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
        artifact_roots: Iterable[str | Path] | None = None,
    ) -> None:
        if not (1 <= heartbeat_ms <= MAX_HEARTBEAT_MS and 1 <= liveness <= MAX_LIVENESS) or schedule_to_start_ms < 0 \
                or tick_ms < 1:  # a worker refuses a Welcome outside them: none would ever register
            raise ValueError(f"heartbeat_ms 1-{MAX_HEARTBEAT_MS}, liveness 1-{MAX_LIVENESS}, tick_ms >= 1, "
                             "schedule_to_start_ms >= 0")
        self.durability = Durability(journal, connections)
        self.durability.on_unwritable = self.fail  # a batch that can never be written stops the daemon
        if answer_timeout_ms is not None and answer_timeout_ms < 1:
            raise ValueError("answer_timeout_ms must be >= 1 (or None: forever)")
        self.runs = RunTable(answer_timeout_ms=answer_timeout_ms)
        super().__init__(address=address, context=context, tick_ms=tick_ms, clock=clock,
                         gate=self.durability if journal is not None else None, curve=curve, insecure=insecure,
                         max_message_bytes=max_message_bytes)
        self.pool = WorkerPool(
            runs=self.runs, send=self.outbox.put, deliver=self.apply,  # ``send`` without the actor's frame
            record_dispatch=self.durability.dispatched if journal is not None else None,
            record_proof=self.durability.proved if journal is not None else None,
            heartbeat_ms=heartbeat_ms, liveness=liveness, schedule_to_start_ms=schedule_to_start_ms,
            max_value_bytes=max_value_bytes, artifacts=ArtifactReader(artifact_roots),
            record_capabilities=self.durability.capabilities_seen if journal is not None else None,
            forget_capabilities=self.durability.capabilities_forgotten if journal is not None else None,
        )
        self.pool.log_debug = self.log_debug  # the kernel read the levels before the pool was made
        self.durability.keep_proofs_of(self.pool.reclaims.holds)  # made after durability: set here
        self.pool.max_message_bytes = max_message_bytes  # announced in every Welcome: workers send nothing bigger
        self.recovery: RecoveryReport | None = None
        self.authority = Authority(roles)
        self.mailbox = Mailbox(pool=self.pool, runs=self.runs, authority=self.authority, outbox=self.outbox,
                               apply=self.apply, send_client=self.send_client)
        self.on_observation: list[Callable[[Observation], None]] = self.mailbox.on_observation
        #: Called with the time at each tick (the client service's lease on held requests).
        self.on_tick: list[Callable[[int], None]] = self.mailbox.on_tick
        # The kernel calls ``self.receive`` for every message: the mailbox's own, not a method
        # that would only pass it on (one Python frame less per message).
        self.receive = self.mailbox.receive  # type: ignore[method-assign]
        self.receive_batch = self.mailbox.receive_batch  # type: ignore[method-assign]
        self.commands = RunCommands(runs=self.runs, durability=self.durability, outbox=self.outbox, apply=self.apply,
                                    clock=clock)

    # -- what other code reads ---------------------------------------------------------------

    @property
    def client_handler(self) -> Callable[[bytes, Any], None] | None:
        """Called as ``handler(identity, message)`` for each client API message (the mailbox's)."""
        return self.mailbox.client_handler

    @client_handler.setter
    def client_handler(self, handler: Callable[[bytes, Any], None] | None) -> None:
        self.mailbox.client_handler = handler

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

    def statistics(self) -> dict[str, int]:
        """Counts for observability: runs in flight, workers, steps waiting for a worker."""
        return {"runs_in_flight": self.runs.in_flight, **self.pool.statistics(), **self.mailbox.statistics()}

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
        log.info("orchestrator_draining", steps_in_flight=self.pool.steps_in_flight(), grace_s=grace_s)
        with anyio.move_on_after(grace_s):
            while self.pool.steps_in_flight():
                await anyio.sleep(self._tick_s)  # re-checked each tick: answers arrive on the socket
        left = self.pool.steps_in_flight()
        self.outbox.flush()
        return left

    # -- the mailbox -------------------------------------------------------------------------

    def receive(self, identity: bytes, message: Any, now: int) -> None:
        """Dispatch one message on its type (the kernel calls it for each of a batch; an
        instance's ``receive`` is its mailbox's own, set in ``__init__``)."""
        self.mailbox.receive(identity, message, now)

    def undelivered(self, identity: bytes, messages: list[Any]) -> None:
        """Invokes the ROUTER refused never reached their worker (see ``WorkerPool.undelivered``);
        those it withheld as too big for it (``TooLarge``) go elsewhere or fail (``_too_large.py``)."""
        withheld = [m for m in messages if type(m) is TooLarge]
        if withheld:
            self.pool.oversized.withheld(identity, withheld, self._clock())
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
        pool = getattr(self, "pool", None)  # None while the kernel's ``__init__`` reads them first
        if pool is not None:
            pool.log_debug = self.log_debug

    # -- facts -------------------------------------------------------------------------------

    def apply(self, run: Run, fact: Fact) -> None:
        """Record ``fact`` (journaled runs), apply it through the run's engine, carry out the
        commands: the one place a fact becomes consequences."""
        if run.source_hash is not None:
            # Journaled before its consequences are sent: the batch commits, then the outbox goes.
            self.durability.fact(run.state.run_id, fact)
        for command in self.runs.advance(run, fact):
            # In the order of how often they come, the usual two by exact type: a class pattern
            # costs about 640 instructions when it matches and a microsecond when it fails.
            match command:
                case _ if type(command) is Dispatch:
                    self.pool.dispatch(command, fact.now_ms)
                case _ if type(command) is RunEnded:
                    self.runs.end(run, command)
                    if run.source_hash is not None:
                        self.durability.ended(run.state.run_id, command.status, run.state.ended_ms or 0)
                case CancelStep(run_id=run_id, step_id=step_id, attempt=attempt):
                    self.pool.cancel_step(run_id, step_id, attempt)
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
        """Answer a suspended run's question and resume it; returns the run id
        (``RunCommands.resume``, whose errors it raises)."""
        return self.commands.resume(answer, run_id=run_id, token=token)

    # -- the client side ---------------------------------------------------------------------

    def submit(self, workflow: RunEngine, inputs: Mapping[str, Any], **options: Any) -> str:
        """Start a run of ``workflow`` with ``inputs`` in its context; returns the run id
        (``RunCommands.submit``, whose options and errors it has)."""
        return self.commands.submit(workflow, inputs, **options)

    async def asubmit(self, workflow: RunEngine, inputs: Mapping[str, Any], **options: Any) -> str:
        """``submit``, the callers of one loop turn sharing one commit (``RunCommands.asubmit``)."""
        return await self.commands.asubmit(workflow, inputs, **options)

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
        """Drop a finished run's result, and its keys when a journal answers for them."""
        self.runs.forget(run_id, keys=self.durability.journal is not None)

    def cancel(self, run_id: str, reason: str = "cancelled by request") -> None:
        """Cancel a run: its running step is sent a Cancel and the run ends ``cancelled``
        (``RunCommands.cancel``, whose errors it raises)."""
        self.commands.cancel(run_id, reason)

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
        return self.commands.run(run_id)
