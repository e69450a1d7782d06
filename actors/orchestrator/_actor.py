"""The orchestrator actor: a ROUTER socket, a worker registry and the pure engine.

It owns every run's state and is the only one to touch it: facts arrive (a submission, an
Outcome, a tick of the clock, a lost worker), the pure engine decides, and this shell carries
out the commands (send an Invoke, send a Cancel, finish a run). Its mailbox is its ROUTER
socket; local submissions are applied on the same event loop, between two socket reads, so no
lock is ever needed.
"""

from __future__ import annotations

import time
import uuid
from functools import partial
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import anyio
import msgspec
import structlog

from actors.orchestrator._registry import InFlight, PendingQueue, WorkerInfo, WorkerRegistry
from actors.orchestrator._results import RunResult
from actors.orchestrator.engine import (
    CancelStep,
    CompiledWorkflow,
    Dispatch,
    RunCancelled,
    RunEnded,
    RunSubmitted,
    StepDeadlineExpired,
    StepFinished,
    StepLost,
    StepUnavailable,
    advance,
    new_run,
)
from protocols.client import CancelRun, RunStatus, Status, Submit, SubmitAccepted, Workers, WorkersInfo
from protocols.client import Error as ClientError
from protocols.messages import (
    PROTOCOL_VERSION,
    Cancel,
    Disconnect,
    Heartbeat,
    Invoke,
    Observation,
    Outcome,
    Ready,
    Welcome,
)
from runtime.curve import CurveServer
from runtime.transport import DEFAULT_MAX_MESSAGE_BYTES, RouterSocket, open_router

__all__ = ["Orchestrator", "UnknownRunError"]

log = structlog.get_logger()

#: Largest artifact file read into a step's context (layer 4); larger ones are truncated.
ARTIFACT_LIMIT_BYTES = 1 << 20


def wall_clock_ms() -> int:
    """Milliseconds since the epoch: the time base of facts (journals outlive a process)."""
    return time.time_ns() // 1_000_000


def _where(exc: BaseException) -> str:
    """``file:line`` of the innermost frame of ``exc`` (a location, never a value)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}" if tb is not None else "?"


_CLIENT_TYPES = (Submit, Status, Workers, CancelRun, SubmitAccepted, RunStatus, WorkersInfo, ClientError)


class UnknownRunError(KeyError):
    """Raised when a run id names no run this orchestrator knows."""


class _Run:
    __slots__ = ("advance", "done", "logged", "result", "state", "workflow")

    def __init__(self, workflow: Any, run_id: str) -> None:
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
        self.done = anyio.Event()
        self.logged = 0
        self.result: RunResult | None = None


class _Queued(msgspec.Struct):
    dispatch: Dispatch
    enqueued_ms: int


class Orchestrator:
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

    # -- lifecycle -------------------------------------------------------------------------

    async def run(self, *, task_status: anyio.abc.TaskStatus = anyio.TASK_STATUS_IGNORED) -> None:
        """Bind the ROUTER and serve until cancelled (or ``stop()``).

        Raises:
            runtime.errors.TransportError: when the address cannot be bound.
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
            log.info("orchestrator_started", address=router.address)
            try:
                with anyio.CancelScope() as scope:
                    self._scope = scope
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(self._receive_loop)
                        tg.start_soon(self._tick_loop)
                        task_status.started(self)
            finally:
                self._router = None
                log.info("orchestrator_stopped", runs_in_flight=len(self._runs))

    def stop(self) -> None:
        """Stop serving; ``run`` returns."""
        if self._scope is not None:
            self._scope.cancel()

    # -- the client side ---------------------------------------------------------------------

    def submit(
        self,
        workflow: CompiledWorkflow | Any,
        inputs: Mapping[str, Any],
        *,
        run_id: str | None = None,
        deadline_ms: int | None = None,
    ) -> str:
        """Start a run of ``workflow`` with ``inputs`` in its context; returns the run id.

        Args:
            deadline_ms: the run's whole budget; past it the run is cancelled (its running
                step is sent Cancel) and ends ``cancelled``. ``None`` for no limit.

        Raises:
            ValueError: when ``run_id`` names a run this orchestrator already has, or
                ``deadline_ms`` is not positive.
        """
        run_id = run_id or uuid.uuid4().hex
        if run_id in self._runs:
            raise ValueError(f"run {run_id} exists already")
        if deadline_ms is not None and deadline_ms < 1:
            raise ValueError("deadline_ms must be >= 1")
        run = _Run(workflow, run_id)
        self._runs[run_id] = run
        if deadline_ms is not None:
            self._run_deadlines[run_id] = self._clock() + deadline_ms
        name = getattr(workflow, "name", None) or getattr(getattr(workflow, "manifest", None), "name", "")
        log.info("run_submitted", run_id=run_id, workflow=name, input_keys=sorted(inputs))
        self._apply(run, RunSubmitted(run_id=run_id, inputs=dict(inputs), now_ms=self._clock()))
        return run_id

    async def result(self, run_id: str) -> RunResult:
        """Wait for the run to end and return its result.

        Raises:
            UnknownRunError: when no such run was submitted here.
        """
        run = self._runs.get(run_id)
        if run is None:
            raise UnknownRunError(run_id)
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

    def send_client(self, identity: bytes, message: Any) -> None:
        """Send a client API reply (``protocols.client``) to the client ``identity``."""
        if self._router is not None:
            self._router.send_client(identity, message)

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

    async def wait_for_capabilities(self, capability_ids: Iterable[str]) -> None:
        """Return once live workers offer every capability in ``capability_ids``."""
        wanted = set(capability_ids)
        while not all(self.registry.offers(c) for c in wanted):
            await self._registered.wait()

    def statistics(self) -> dict[str, int]:
        """Counts for observability: runs in flight, workers, steps waiting for a worker."""
        return {
            "runs_in_flight": sum(1 for r in self._runs.values() if r.result is None),
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

    async def _tick_loop(self) -> None:
        while True:
            await anyio.sleep(self._tick_s)
            self._on_tick(self._clock())

    def _on_message(self, identity: bytes, message: Any, now: int) -> None:
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
            case _:
                log.warning("message_unexpected", peer=identity.hex(), op=type(message).__name__)

    def _on_ready(self, identity: bytes, ready: Ready, now: int) -> None:
        if ready.protocol != PROTOCOL_VERSION:
            reason = f"protocol version {ready.protocol} is not supported; this orchestrator speaks {PROTOCOL_VERSION}"
            log.warning("worker_refused", worker_id=ready.worker_id, reason=reason)
            self._send(identity, Disconnect(reason=reason))
            return
        if ready.slots < 1:
            log.warning("worker_refused", worker_id=ready.worker_id, reason="slots must be >= 1")
            self._send(identity, Disconnect(reason="slots must be >= 1"))
            return
        info = WorkerInfo(
            identity=identity,
            worker_id=ready.worker_id,
            host=ready.host,
            pid=ready.pid,
            capabilities={m.id: m for m in ready.capabilities},
            slots=ready.slots,
            last_seen_ms=now,
        )
        held = {tuple(k) for k in ready.holding}
        again = self.registry.get(identity) is not None
        orphans, kept = self.registry.register(info, keep=held)
        self._send(identity, Welcome(worker_id=ready.worker_id, heartbeat_ms=self.heartbeat_ms, liveness=self.liveness))
        log.info(
            "worker_ready",
            worker_id=ready.worker_id,
            host=ready.host,
            pid=ready.pid,
            slots=ready.slots,
            capabilities=sorted(info.capabilities),
            again=again,
            kept=len(kept),
            orphaned=len(orphans),
        )
        # Attempts the worker holds that are no longer awaited from it (re-dispatched, ended,
        # or lost in this re-registration): stop them; their answers would be ignored anyway.
        stale = (held - {(k.run_id, k.step_id, k.attempt) for k in kept}) | {(o.run_id, o.step_id, o.attempt) for o in orphans}
        for run_id, step_id, attempt in stale:
            self._send(identity, Cancel(run_id=run_id, step_id=step_id, attempt=attempt))
        self._orphaned(orphans, now, "worker_lost")
        self._registered.set()
        self._registered = anyio.Event()
        for cap in info.capabilities:
            self._drain_pending(cap, now)

    def _on_outcome(self, identity: bytes, outcome: Outcome, now: int) -> None:
        owner = self.registry.owner(outcome.run_id, outcome.step_id, outcome.attempt)
        if owner is None or owner.identity != identity:
            # Not in flight on that worker: re-dispatched after it was lost, or answered
            # already (a re-send after a reconnect). Applying it would report a step twice.
            log.info(
                "outcome_ignored",
                run_id=outcome.run_id,
                step_id=outcome.step_id,
                attempt=outcome.attempt,
                outcome=outcome.event,
                reason="attempt not in flight on this worker",
            )
            return
        self.registry.release(outcome.run_id, outcome.step_id, outcome.attempt)
        self._deadlines.pop((outcome.run_id, outcome.step_id, outcome.attempt), None)
        run = self._runs.get(outcome.run_id)
        if run is None or run.result is not None:
            log.info("outcome_ignored", run_id=outcome.run_id, step_id=outcome.step_id, reason="run not running")
        else:
            self._apply(run, StepFinished(outcome=outcome, now_ms=now))
        if owner is not None:
            for cap in owner.capabilities:
                self._drain_pending(cap, now)

    def _on_tick(self, now: int) -> None:
        if now - self._last_heartbeat_ms >= self.heartbeat_ms:
            self._last_heartbeat_ms = now
            for worker in list(self.registry):
                self._send(worker.identity, Heartbeat())
        for worker in self.registry.expired(now, self.heartbeat_ms * self.liveness):
            log.warning("worker_lost", worker_id=worker.worker_id, host=worker.host, in_flight=len(worker.in_flight))
            self._lose_worker(worker.identity, now, "worker_lost")
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
        late = self._pending.remove_where(lambda q: now - q.enqueued_ms > self.schedule_to_start_ms)
        for queued in late:
            d = queued.dispatch
            run = self._runs.get(d.run_id)
            self._deadlines.pop((d.run_id, d.step_id, d.attempt), None)
            if run is not None and run.result is None:
                log.warning("step_unavailable", run_id=d.run_id, step_id=d.step_id, capability=d.capability)
                self._apply(run, StepUnavailable(step_id=d.step_id, attempt=d.attempt, now_ms=now))

    def _lose_worker(self, identity: bytes, now: int, reason: str) -> None:
        self._orphaned(self.registry.remove(identity), now, reason)

    def _orphaned(self, steps: list[InFlight], now: int, reason: str) -> None:
        for step in steps:
            self._deadlines.pop((step.run_id, step.step_id, step.attempt), None)
            run = self._runs.get(step.run_id)
            if run is not None and run.result is None:
                self._apply(run, StepLost(step_id=step.step_id, attempt=step.attempt, reason=reason, now_ms=now))

    # -- carrying out the engine's commands ------------------------------------------------

    def _apply(self, run: _Run, fact: Any) -> None:
        commands = run.advance(run.state, fact)
        self._log_progress(run)
        for command in commands:
            match command:
                case Dispatch():
                    self._dispatch(command, fact.now_ms)
                case CancelStep(run_id=run_id, step_id=step_id, attempt=attempt):
                    self._cancel_step(run_id, step_id, attempt)
                case RunEnded():
                    self._finish(run, command)

    def _dispatch(self, dispatch: Dispatch, now: int) -> None:
        if dispatch.deadline_at_ms is not None:
            self._deadlines[(dispatch.run_id, dispatch.step_id, dispatch.attempt)] = dispatch.deadline_at_ms
        worker = self.registry.pick(dispatch.capability)
        if worker is None:
            self._pending.push(dispatch.capability, _Queued(dispatch, now))
            log.info("step_queued", run_id=dispatch.run_id, step_id=dispatch.step_id, capability=dispatch.capability)
            return
        self._send_invoke(worker, dispatch, now)

    def _send_invoke(self, worker: WorkerInfo, d: Dispatch, now: int) -> None:
        context = d.context
        if d.artifacts:
            context = msgspec.structs.replace(context, artifact=self._read_artifacts(d))
        remaining = None if d.deadline_at_ms is None else max(d.deadline_at_ms - now, 1)
        invoke = Invoke(
            run_id=d.run_id,
            step_id=d.step_id,
            attempt=d.attempt,
            capability=d.capability,
            inputs=d.inputs,
            context=context,
            deadline_ms=remaining,
        )
        self.registry.assign(
            worker, InFlight(run_id=d.run_id, step_id=d.step_id, attempt=d.attempt, capability=d.capability, sent_ms=now)
        )
        self._send(worker.identity, invoke)
        log.debug(
            "step_dispatched",
            run_id=d.run_id,
            step_id=d.step_id,
            attempt=d.attempt,
            capability=d.capability,
            worker_id=worker.worker_id,
            input_keys=list(d.inputs),
        )

    def _drain_pending(self, capability: str, now: int) -> None:
        while True:
            worker = self.registry.pick(capability)
            if worker is None:
                return
            queued = self._pending.pop(capability)
            if queued is None:
                return
            self._send_invoke(worker, queued.dispatch, now)

    def _cancel_step(self, run_id: str, step_id: str, attempt: int) -> None:
        self._deadlines.pop((run_id, step_id, attempt), None)
        self._pending.remove_where(
            lambda q: (q.dispatch.run_id, q.dispatch.step_id, q.dispatch.attempt) == (run_id, step_id, attempt)
        )
        owner = self.registry.owner(run_id, step_id, attempt)
        if owner is not None:
            # The slot stays taken until the worker answers (cancelled): it is still running.
            self._send(owner.identity, Cancel(run_id=run_id, step_id=step_id, attempt=attempt))

    def _finish(self, run: _Run, ended: RunEnded) -> None:
        state = run.state
        run.result = RunResult(
            run_id=state.run_id,
            status=ended.status,
            error=ended.error,
            context=state.context,
            trace=list(state.trace),
            started_ms=state.started_ms,
            ended_ms=state.ended_ms,
        )
        duration = (state.ended_ms or 0) - (state.started_ms or 0)
        if ended.status == "completed":
            log.info("run_completed", run_id=state.run_id, steps=len(state.trace), duration_ms=duration)
        else:
            log.warning("run_failed", run_id=state.run_id, status=ended.status, error=ended.error, steps=len(state.trace))
        self._run_deadlines.pop(state.run_id, None)
        run.done.set()
        for callback in self.on_run_ended:
            try:
                callback(run.result)
            except Exception as exc:  # an observer's bug must not break the run's end
                log.error("run_ended_callback_failed", run_id=state.run_id, error=type(exc).__name__, where=_where(exc))

    def _log_progress(self, run: _Run) -> None:
        state = run.state
        for note in state.notes:
            log.info("engine_note", run_id=state.run_id, note=note)
        state.notes.clear()
        trace = state.trace
        for entry in trace[run.logged :]:
            log.info(
                "step_completed",
                run_id=state.run_id,
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
                log.info("transition_taken", run_id=state.run_id, block=entry.block, signal=entry.event, action=entry.action)
        run.logged = len(trace)

    def _read_artifacts(self, d: Dispatch) -> dict[str, str]:
        base = Path(d.context.system.worktree or ".")
        contents: dict[str, str] = {}
        for name in d.artifacts:
            path = base / name
            try:
                with path.open("rb") as fh:
                    data = fh.read(ARTIFACT_LIMIT_BYTES)
                contents[name] = data.decode("utf-8", errors="replace")
            except OSError as exc:
                log.warning("artifact_unreadable", run_id=d.run_id, step_id=d.step_id, artifact=name, error=type(exc).__name__)
                contents[name] = ""
        return contents

    def _send(self, identity: bytes, message: Any) -> None:
        if self._router is not None:
            self._router.send(identity, message)
