"""The orchestrator actor: a ROUTER socket, a worker registry, the pure engine and a journal.

It owns every run's state and is the only one to touch it: facts arrive (a submission, an
Outcome, a tick of the clock, a lost worker), the pure engine decides, and this shell carries
out the commands (send an Invoke, send a Cancel, finish a run). Its mailbox is its ROUTER
socket; local submissions are applied on the same event loop, between two socket reads, so no
lock is ever needed.

The shell is split by concern: runs (``_runs``), workers (``_workers``), the journal's group
commit and recovery (``_durable``); this module holds the lifecycle, the loops and the calls
local code and the client service make.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any, get_args

import anyio
import structlog

from ontoflow.actors.orchestrator._durable import DurableMixin, RecoveryReport
from ontoflow.actors.orchestrator._ids import new_run_id
from ontoflow.actors.orchestrator._registry import PendingQueue, WorkerRegistry
from ontoflow.actors.orchestrator._results import RunResult
from ontoflow.actors.orchestrator._runs import RunsMixin, _Run, _where
from ontoflow.actors.orchestrator._workers import WorkersMixin
from ontoflow.actors.orchestrator.engine import CompiledWorkflow, RunCancelled, RunSubmitted
from ontoflow.protocols.client import ClientMessage
from ontoflow.protocols.messages import Disconnect, Heartbeat, Observation, Outcome, Ready
from ontoflow.runtime.curve import CurveServer
from ontoflow.runtime.journal import Batch, Journal, RunRow
from ontoflow.runtime.transport import DEFAULT_MAX_MESSAGE_BYTES, RouterSocket, open_router

__all__ = ["Orchestrator", "UnknownRunError", "wall_clock_ms"]

log = structlog.get_logger()

_CLIENT_TYPES = get_args(ClientMessage)  # a daemon's SubmitRequest is a Submit


def wall_clock_ms() -> int:
    """Milliseconds since the epoch: the time base of facts (journals outlive a process)."""
    return time.time_ns() // 1_000_000


class UnknownRunError(KeyError):
    """Raised when a run id names no run this orchestrator knows."""


class Orchestrator(RunsMixin, WorkersMixin, DurableMixin):
    """Routes every run through its transition table and every step to a live worker.

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
        client_handler: called as ``handler(identity, message)`` for each client API message
            (``protocols.client``) arriving on the ROUTER; without one they are logged and
            dropped. Replies go out with ``send_client``.
        journal: an open journal: runs submitted with a source are journaled (group commit)
            and the unfinished ones are recovered when ``run`` starts. ``None``: in memory only.
        connections: connection name -> value, for the ``@name`` connections of pipelines
            (compiled at submit and at recovery; ``ONTOFLOW_CONNECTION_<NAME>`` otherwise).
            Never journaled.
        max_value_bytes: the largest encoded value a step output may put in the context; a
            bigger one ends its step ``failure`` with the reason ``output_too_large`` (checked
            in the shell, before the StepFinished fact exists). ``None``: no limit.

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
        clock=wall_clock_ms,
        curve: CurveServer | None = None,
        insecure: bool = False,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        client_handler: Any = None,
        journal: Journal | None = None,
        connections: Mapping[str, Any] | None = None,
        max_value_bytes: int | None = None,
    ) -> None:
        if heartbeat_ms < 1 or liveness < 1 or schedule_to_start_ms < 0 or tick_ms < 1:
            raise ValueError("heartbeat_ms, liveness and tick_ms must be >= 1, schedule_to_start_ms >= 0")
        self._bind = address
        self._context = context
        self.heartbeat_ms = heartbeat_ms
        self.liveness = liveness
        self.schedule_to_start_ms = schedule_to_start_ms
        self._tick_s = tick_ms / 1000
        self._clock = clock
        self._router: RouterSocket | None = None
        self.address = address
        self.registry = WorkerRegistry()
        self._pending = PendingQueue()
        self._runs: dict[str, _Run] = {}
        self._deadlines: dict[tuple[str, str, int], int] = {}
        self._registered = anyio.Event()
        self._last_heartbeat_ms = 0
        self._scope: anyio.CancelScope | None = None
        self._curve = curve
        self._insecure = insecure
        self._max_message_bytes = max_message_bytes
        self.client_handler = client_handler
        self._run_deadlines: dict[str, int] = {}
        #: Called with each run's RunResult when it ends (the daemon answers waiting clients).
        self.on_run_ended: list[Any] = []
        #: Called as ``callback(run_id, trace_entries)`` when steps of a run end (watchers).
        self.on_progress: list[Any] = []
        #: Called with each Observation a worker reports (triggers).
        self.on_observation: list[Any] = []
        self.runs_in_flight = 0
        #: Set by ``drain``: no new step is sent; the held ones resume after a restart.
        self.draining = False
        self.journal = journal
        self._batch: Batch | None = Batch() if journal is not None else None
        self._outbox: list[tuple[bytes, Any, bool]] = []
        self._in_batch = False
        self._flush_scheduled = False
        self._failure: Exception | None = None  # a deferred flush that failed: run() raises it
        self._refresh_log_levels()
        self._commit_group = None
        self._by_key: dict[str, str] = {}
        self._by_trigger: dict[str, str] = {}
        self._sources: set[str] = set()
        self.recovery: RecoveryReport | None = None
        self.connections: dict[str, Any] = dict(connections or {})
        self.max_value_bytes = max_value_bytes

    # -- lifecycle -------------------------------------------------------------------------

    async def run(self, *, task_status: anyio.abc.TaskStatus = anyio.TASK_STATUS_IGNORED) -> None:
        """Bind the ROUTER, recover the journal's unfinished runs, and serve until cancelled.

        Raises:
            runtime.errors.TransportError: when the address cannot be bound.
            runtime.journal.JournalError: when the journal cannot be read or written.
        """
        async with open_router(
            self._bind,
            context=self._context,
            curve=self._curve,
            insecure=self._insecure,
            max_message_bytes=self._max_message_bytes,
        ) as router:
            self._router = router
            self.address = router.address
            log.info("orchestrator_started", address=router.address, journal=self.journal is not None)
            if self.journal is not None:
                self.recovery = self._recover(self._clock())
            try:
                with anyio.CancelScope() as scope:
                    self._scope = scope
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(self._receive_loop)
                        tg.start_soon(self._tick_loop)
                        task_status.started(self)
            finally:
                if self._failure is None:
                    self._flush()  # what the last batch decided is recorded (and sent) before we go
                self._router = None
                log.info("orchestrator_stopped", runs_in_flight=self.runs_in_flight)
        if self._failure is not None:
            raise self._failure

    def stop(self) -> None:
        """Stop serving; ``run`` returns."""
        if self._scope is not None:
            self._scope.cancel()

    async def drain(self, grace_s: float) -> int:
        """Stop sending new steps and wait (at most ``grace_s``) for the running ones to answer.

        Returns:
            How many attempts were still running when the grace period ended (0: drained).
        """
        self.draining = True
        log.info("orchestrator_draining", steps_in_flight=self.steps_in_flight(), grace_s=grace_s)
        with anyio.move_on_after(grace_s):
            while self.steps_in_flight():
                await anyio.sleep(self._tick_s)  # re-checked each tick: answers arrive on the socket
        left = self.steps_in_flight()
        self._flush()
        return left

    # -- the client side ---------------------------------------------------------------------

    def submit(
        self,
        workflow: CompiledWorkflow | Any,
        inputs: Mapping[str, Any],
        *,
        run_id: str | None = None,
        deadline_ms: int | None = None,
        source: tuple[str, bytes] | None = None,
        idempotency_key: str | None = None,
        trigger_key: str | None = None,
    ) -> str:
        """Start a run of ``workflow`` with ``inputs`` in its context; returns the run id.

        Args:
            deadline_ms: the run's whole budget; past it the run is cancelled (its running
                step is sent Cancel) and ends ``cancelled``. ``None`` for no limit.
            source: ``(hash, bytes)`` of the workflow's pinned source
                (``actors.orchestrator.encode_source``): with a journal, the run is journaled
                and survives a crash; without a source it lives in memory only.
            idempotency_key: a later submit with the same key gets this run (``find_run``).
            trigger_key: the observation that started the run (same use).

        Raises:
            ValueError: when ``run_id`` names a run this orchestrator already has, or
                ``deadline_ms`` is not positive.
            runtime.journal.JournalError: when the submission cannot be journaled.
        """
        if run_id is None:
            run_id = new_run_id()  # fresh: no need to ask the journal whether it exists
        elif run_id in self._runs or (self.journal is not None and source is not None and self.journal.run(run_id)):
            raise ValueError(f"run {run_id} exists already")
        if deadline_ms is not None and deadline_ms < 1:
            raise ValueError("deadline_ms must be >= 1")
        now = self._clock()
        journaled = self.journal is not None and source is not None
        run = _Run(workflow, run_id, source[0] if journaled and source is not None else None)
        self._runs[run_id] = run
        self.runs_in_flight += 1
        deadline_at = None if deadline_ms is None else now + deadline_ms
        if deadline_at is not None:
            self._run_deadlines[run_id] = deadline_at
        if idempotency_key is not None:
            self._by_key[idempotency_key] = run_id
        if trigger_key is not None:
            self._by_trigger[trigger_key] = run_id
        name = getattr(workflow, "name", None) or getattr(getattr(workflow, "manifest", None), "name", "")
        if journaled and source is not None:
            self._journal_submit(run, source, RunRow(
                run_id=run_id, source_hash=source[0], submitted_ms=now, deadline_at_ms=deadline_at,
                idempotency_key=idempotency_key, trigger_key=trigger_key, name=name or ""))
        if self._log_info:
            log.info("run_submitted", run_id=run_id, workflow=name, input_keys=sorted(inputs), journaled=journaled)
        self._apply(run, RunSubmitted(run_id=run_id, inputs=dict(inputs), now_ms=now))
        self._maybe_flush()
        return run_id

    async def result(self, run_id: str) -> RunResult:
        """Wait for the run to end and return its result.

        Raises:
            UnknownRunError: when no such run was submitted here.
        """
        run = self._runs.get(run_id)
        if run is None:
            raise UnknownRunError(run_id)
        if run.result is None:
            if run.done is None:
                run.done = anyio.Event()
            await run.done.wait()
        assert run.result is not None  # set before done, by _finish
        return run.result

    def status(self, run_id: str) -> RunResult | None:
        """The result of an ended run, or None while it runs.

        Raises:
            UnknownRunError: when no such run is known here (never submitted, or forgotten).
        """
        run = self._runs.get(run_id)
        if run is None:
            raise UnknownRunError(run_id)
        return run.result

    def run_state(self, run_id: str) -> Any:
        """The live engine state of a run held in memory (read it, never change it).

        Raises:
            UnknownRunError: when the run is not in memory.
        """
        run = self._runs.get(run_id)
        if run is None:
            raise UnknownRunError(run_id)
        return run.state

    def forget(self, run_id: str) -> None:
        """Drop a finished run's result (a long-running process would otherwise keep them all)."""
        run = self._runs.get(run_id)
        if run is not None and run.result is not None:
            del self._runs[run_id]

    def cancel(self, run_id: str, reason: str = "cancelled by request") -> None:
        """Cancel a run: its running step is sent a Cancel and the run ends ``cancelled``.

        Raises:
            UnknownRunError: when no such run was submitted here.
        """
        run = self._runs.get(run_id)
        if run is None:
            raise UnknownRunError(run_id)
        if run.result is None:
            self._apply(run, RunCancelled(reason=reason, now_ms=self._clock()))
            self._maybe_flush()

    async def wait_for_capabilities(self, capability_ids: Iterable[str]) -> None:
        """Return once live workers offer every capability in ``capability_ids``."""
        wanted = set(capability_ids)
        while not all(self.registry.offers(c) for c in wanted):
            await self._registered.wait()

    async def wait_for_workers(self, count: int) -> None:
        """Return once at least ``count`` live workers are registered."""
        while len(self.registry) < count:
            await self._registered.wait()

    def statistics(self) -> dict[str, int]:
        """Counts for observability: runs in flight, workers, steps waiting for a worker."""
        return {
            "runs_in_flight": self.runs_in_flight,
            "workers": len(self.registry),
            "steps_waiting": sum(1 for _ in self._pending.items()),
            "steps_in_flight": len(self._deadlines),
        }

    # -- the loop ----------------------------------------------------------------------------

    async def _receive_loop(self) -> None:
        router = self._router
        assert router is not None
        while True:
            batch = await router.recv_batch()
            now = self._clock()
            self._refresh_log_levels()
            self._in_batch = True
            try:
                for identity, message in batch:
                    try:
                        self._on_message(identity, message, now)
                    except Exception as exc:  # one bad message must not stop every other run
                        log.error(
                            "message_handling_failed",
                            peer=identity.hex(),
                            op=type(message).__name__,
                            error=type(exc).__name__,
                            where=_where(exc),
                        )
            finally:
                self._in_batch = False
            self._flush()  # one transaction for the whole batch, then its sends, one per peer

    async def _tick_loop(self) -> None:
        while True:
            await anyio.sleep(self._tick_s)
            self._on_tick(self._clock())

    def _refresh_log_levels(self) -> None:
        # Per-step log lines cost microseconds even when filtered out (the lazy logger proxy
        # and the keyword arguments), so the hot path asks these flags, read once per batch.
        self._log_info = log.is_enabled_for(logging.INFO)
        self._log_debug = log.is_enabled_for(logging.DEBUG)

    def _on_tick(self, now: int) -> None:
        self._refresh_log_levels()
        self._check_workers(now)
        self._expire_deadlines(now)
        self._flush()

    def _on_message(self, identity: bytes, message: Any, now: int) -> None:
        if type(message) is Outcome:  # the hot path: most of what arrives
            worker = self.registry.get(identity)
            if worker is not None:
                worker.last_seen_ms = now
            self._on_outcome(identity, message, now)
            return
        if isinstance(message, _CLIENT_TYPES):
            if self.client_handler is None:
                log.warning("client_request_unserved", peer=identity.hex(), op=type(message).__name__)
            else:
                self.client_handler(identity, message)
            return
        worker = self.registry.get(identity)
        if worker is not None:
            worker.last_seen_ms = now
        match message:
            case Outcome():
                self._on_outcome(identity, message, now)
            case Heartbeat():
                if worker is None:
                    log.warning("heartbeat_from_unknown_peer", peer=identity.hex())
            case Ready():
                self._on_ready(identity, message, now)
            case Disconnect(reason=reason):
                if worker is not None:
                    log.info("worker_disconnected", worker_id=worker.worker_id, reason=reason)
                    self._lose_worker(identity, now, "worker_lost")
            case Observation():
                log.info("observation_received", capability=message.capability, kind=message.kind, id=message.id)
                for callback in self.on_observation:
                    callback(message)
            case _:
                log.warning("message_unexpected", peer=identity.hex(), op=type(message).__name__)
