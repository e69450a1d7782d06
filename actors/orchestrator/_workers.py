"""The worker side of the orchestrator shell: registration, outcomes, liveness, dispatching.

``WorkersMixin`` turns worker messages and silences into facts (an Outcome, a lost worker) and
the engine's Dispatch/CancelStep commands into Invoke/Cancel messages. A mixin of
:class:`~actors.orchestrator.Orchestrator`.

An outcome whose output holds a value bigger than ``max_value_bytes`` is replaced, here in
the shell and before the StepFinished fact is built, by a ``failure`` outcome with the reason
``output_too_large`` (its error names the key and the size, never the value): the value never
enters the context nor the journal, the pure engines stay unaware of the limit, and the
transition table routes the failure like any other.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
import structlog

from ontoflow.actors.orchestrator._payload import OUTPUT_TOO_LARGE, oversized
from ontoflow.actors.orchestrator._registry import InFlight, PendingQueue, WorkerInfo, WorkerRegistry
from ontoflow.actors.orchestrator.engine import Dispatch, StepFinished, StepLost, StepUnavailable
from ontoflow.protocols.events import FAILURE
from ontoflow.protocols.messages import PROTOCOL_VERSION, Cancel, Disconnect, Heartbeat, Invoke, Outcome, Ready, Welcome

__all__ = ["ARTIFACT_LIMIT_BYTES", "WorkersMixin"]

log = structlog.get_logger()

#: Largest artifact file read into a step's context (layer 4); larger ones are truncated.
ARTIFACT_LIMIT_BYTES = 1 << 20

_record_encoder = msgspec.msgpack.Encoder()


class _Queued(msgspec.Struct):
    dispatch: Dispatch
    enqueued_ms: int


def _limit_outputs(outcome: Outcome, limit: int) -> Outcome:
    """``outcome``, or a ``failure`` without outputs when one of its values exceeds ``limit``."""
    try:
        found = oversized(outcome.outputs, limit)
    except (TypeError, msgspec.EncodeError):  # it arrived decoded, so it encodes; belt and braces
        return outcome
    if found is None:
        return outcome
    key, size = found
    log.warning("step_output_too_large", run_id=outcome.run_id, step_id=outcome.step_id, attempt=outcome.attempt,
                key=key, size=size, limit=limit)
    return msgspec.structs.replace(
        outcome, event=FAILURE, outputs={}, reason=OUTPUT_TOO_LARGE,
        error=f"output '{key}' is {size} bytes encoded, over the limit of {limit} bytes",
    )


class WorkersMixin:
    """Workers in, Invokes out (see the module docstring)."""

    registry: WorkerRegistry
    _pending: PendingQueue
    _deadlines: dict[tuple[str, str, int], int]
    heartbeat_ms: int
    liveness: int
    schedule_to_start_ms: int
    _last_heartbeat_ms: int
    _registered: anyio.Event
    draining: bool

    def _on_ready(self, identity: bytes, ready: Ready, now: int) -> None:
        if ready.protocol != PROTOCOL_VERSION:
            reason = f"protocol version {ready.protocol} is not supported; this orchestrator speaks {PROTOCOL_VERSION}"
            log.warning("worker_refused", worker_id=ready.worker_id, reason=reason)
            self._send(identity, Disconnect(reason=reason))  # type: ignore[attr-defined]
            return
        if ready.slots < 1:
            log.warning("worker_refused", worker_id=ready.worker_id, reason="slots must be >= 1")
            self._send(identity, Disconnect(reason="slots must be >= 1"))  # type: ignore[attr-defined]
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
        self._send(identity, Welcome(worker_id=ready.worker_id, heartbeat_ms=self.heartbeat_ms, liveness=self.liveness))  # type: ignore[attr-defined]
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
        # lost in this re-registration, or from before a daemon restart): stop them; their
        # answers would be ignored anyway.
        stale = (held - {(k.run_id, k.step_id, k.attempt) for k in kept}) | {(o.run_id, o.step_id, o.attempt) for o in orphans}
        for run_id, step_id, attempt in stale:
            self._send(identity, Cancel(run_id=run_id, step_id=step_id, attempt=attempt))  # type: ignore[attr-defined]
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
        run = self._runs.get(outcome.run_id)  # type: ignore[attr-defined]
        if run is None or run.result is not None:
            log.info("outcome_ignored", run_id=outcome.run_id, step_id=outcome.step_id, reason="run not running")
        else:
            limit = self.max_value_bytes  # type: ignore[attr-defined]
            if limit is not None and outcome.outputs:
                outcome = _limit_outputs(outcome, limit)
            self._apply(run, StepFinished(outcome=outcome, now_ms=now))  # type: ignore[attr-defined]
        for cap in owner.capabilities:
            self._drain_pending(cap, now)

    def _check_workers(self, now: int) -> None:
        """Heartbeat out, purge every silent worker, end steps that waited too long for one."""
        if now - self._last_heartbeat_ms >= self.heartbeat_ms:
            self._last_heartbeat_ms = now
            for worker in list(self.registry):
                self._send(worker.identity, Heartbeat())  # type: ignore[attr-defined]
        for worker in self.registry.expired(now, self.heartbeat_ms * self.liveness):
            log.warning("worker_lost", worker_id=worker.worker_id, host=worker.host, in_flight=len(worker.in_flight))
            self._lose_worker(worker.identity, now, "worker_lost")
        if self.draining:
            return  # held back on purpose: they resume after the restart
        late = self._pending.remove_where(lambda q: now - q.enqueued_ms > self.schedule_to_start_ms)
        for queued in late:
            d = queued.dispatch
            run = self._runs.get(d.run_id)  # type: ignore[attr-defined]
            self._deadlines.pop((d.run_id, d.step_id, d.attempt), None)
            if run is not None and run.result is None:
                log.warning("step_unavailable", run_id=d.run_id, step_id=d.step_id, capability=d.capability)
                self._apply(run, StepUnavailable(step_id=d.step_id, attempt=d.attempt, now_ms=now))  # type: ignore[attr-defined]

    def _lose_worker(self, identity: bytes, now: int, reason: str) -> None:
        self._orphaned(self.registry.remove(identity), now, reason)

    def _orphaned(self, steps: list[InFlight], now: int, reason: str) -> None:
        for step in steps:
            self._deadlines.pop((step.run_id, step.step_id, step.attempt), None)
            run = self._runs.get(step.run_id)  # type: ignore[attr-defined]
            if run is not None and run.result is None:
                self._apply(run, StepLost(step_id=step.step_id, attempt=step.attempt, reason=reason, now_ms=now))  # type: ignore[attr-defined]

    def _dispatch(self, dispatch: Dispatch, now: int) -> None:
        if dispatch.deadline_at_ms is not None:
            self._deadlines[(dispatch.run_id, dispatch.step_id, dispatch.attempt)] = dispatch.deadline_at_ms
        worker = None if self.draining else self.registry.pick(dispatch.capability)
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
        batch = self._batch  # type: ignore[attr-defined]
        if batch is not None:
            run = self._runs.get(d.run_id)  # type: ignore[attr-defined]
            if run is not None and run.source_hash is not None:
                # Recorded before it is sent (the batch commits first): after a crash, an attempt
                # with this record may have run; one without it surely did not.
                body = _record_encoder.encode((d.step_id, d.attempt, d.capability, worker.worker_id))
                batch.fact(d.run_id, "dispatched", now, body)
        self._send(worker.identity, invoke)  # type: ignore[attr-defined]
        if self._log_debug:  # type: ignore[attr-defined]
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
        if self.draining:
            return
        pending = self._pending
        while capability in pending:
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
            self._send(owner.identity, Cancel(run_id=run_id, step_id=step_id, attempt=attempt))  # type: ignore[attr-defined]

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

    def steps_in_flight(self) -> int:
        """Attempts sent to workers and not answered yet."""
        return sum(len(w.in_flight) for w in self.registry)

