"""The worker pool: who is alive, what each offers and runs, and where the next step goes.

It owns the worker registry (credits: a step goes only to a worker with a free slot), the queue
of steps waiting for a worker, and its clocks (``_pool_clocks.py``: silences, recovered attempts
awaiting their worker, undelivered Invokes; step deadlines, schedule-to-start). It turns worker
messages and silences into facts (an Outcome, a lost worker, a step that waited too long, one
past its deadline) handed to ``deliver`` with its run, and the engine's Dispatch and CancelStep
into Invoke and Cancel (``_step_payload.py``, which also fails an outcome carrying a value over
``max_value_bytes`` as ``output_too_large``), handed to ``send`` under an identity carrying the
worker's size limit: an Invoke over it is withheld (:attr:`WorkerPool.oversized`, ``_too_large.py``).
The catalogue (``WorkerRegistry.known``) keeps what every worker has offered, journaled
(``record_capabilities``); a full one makes room just before a Ready registers (``_catalogue_room.py``).

After a daemon restart, an attempt journaled as sent awaits its worker W until T
(:meth:`WorkerPool.await_worker`); W registering again, proving its session and holding it, has it
in flight again, its re-sent Outcome applied; else (or past T) it is ``interrupted`` (``_reclaim.py``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import anyio
import structlog

from ontoflow.actors.orchestrator._mailbox import key_of
from ontoflow.actors.orchestrator._pool_clocks import RECONNECT_ALLOWANCE_MS as RECONNECT_ALLOWANCE_MS  # re-exported
from ontoflow.actors.orchestrator._pool_clocks import Liveness, Queued, StepClocks
from ontoflow.actors.orchestrator._artifacts import ArtifactReader
from ontoflow.actors.orchestrator._catalogue_room import CatalogueRoom
from ontoflow.actors.orchestrator._ignored import IgnoredOutcomes, RefusedReadys
from ontoflow.actors.orchestrator._pending_queue import PendingQueue
from ontoflow.actors.orchestrator._ready_holding import stale_cancels
from ontoflow.actors.orchestrator._reclaim import Reclaims
from ontoflow.actors.orchestrator._registry import InFlight, SentStep, WorkerInfo, WorkerRegistry
from ontoflow.actors.orchestrator._run_table import Run, RunTable
from ontoflow.actors.orchestrator._step_payload import invoke_for, limit_outputs
from ontoflow.actors.orchestrator._too_large import OversizedInvokes, in_flight_dispatch
from ontoflow.actors.orchestrator.engine import Dispatch, Fact, StepFinished, StepLost
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.messages import PROTOCOL_VERSION, Cancel, Disconnect, Heartbeat, Invoke, Outcome, Ready, Welcome, ready_problem
from ontoflow.runtime.log_budget import at_doubling
from ontoflow.runtime.transport import limited

__all__ = ["WorkerPool"]

log = structlog.get_logger()


class WorkerPool:
    """Workers in, Invokes out (see the module docstring).

    Args:
        runs: the run table (which runs are live, for an outcome or a lost step).
        send: sends a wire message to a worker identity (after the batch's commit).
        deliver: applies a fact to a live run.
        record_dispatch: called as ``record_dispatch(run, dispatch, worker_id, now, session, key)``
            before an Invoke of ``run`` leaves (the journal's ``dispatched`` record); ``None``: none.
        record_proof: called as ``record_proof(worker_id, token, previous, key, now)`` when a
            worker proving its session after a restart is welcomed with a fresh token (the
            journal's ``proved`` record, ``_reclaim.py``); ``None``: none.
        heartbeat_ms: interval announced to workers and of the heartbeats sent to them.
        liveness: intervals of silence after which a worker is dead.
        schedule_to_start_ms: how long a step may wait for a worker before it is unavailable.
        max_value_bytes: the largest encoded value an outcome may carry; ``None``: no limit.
        record_capabilities: called as ``record_capabilities(metadata, now)`` with what a worker
            offers (the journal's catalogue); ``None``: none.
        forget_capabilities: called with the ids dropped from a full catalogue (``_catalogue_room.py``;
            the journal's ``Durability.capabilities_forgotten``); ``None``: none.
        max_workers: workers registered at once; a Ready past it is refused (Disconnect), so peers
            cannot grow the registry without bound (a silent one is purged after ``liveness`` heartbeats).
        artifacts: reads the artifacts a step names (``_artifacts.py``; default: any worktree).

    Attributes:
        registry: the live workers.
        draining: no new step is sent; the held ones resume after a restart.
        log_debug: one line per dispatched step (the actor sets it once per batch).
        on_ready: called as ``fn(info, ready, now)`` after each registration (the domains a
            worker announces are read there, ``_domains.DomainBook.announced``).
    """
    max_message_bytes = 0  #: the largest message this daemon accepts, sent in every Welcome (0: unknown; the orchestrator sets it)
    def __init__(
        self,
        *,
        runs: RunTable,
        send: Callable[[bytes, Any], None],
        deliver: Callable[[Run, Fact], None],
        record_dispatch: Callable[[Run, Dispatch, str, int, str, str], None] | None = None,
        record_proof: Callable[[str, str, str, str, int], None] | None = None,
        heartbeat_ms: int = 1000,
        liveness: int = 3,
        schedule_to_start_ms: int = 30_000,
        max_value_bytes: int | None = None,
        record_capabilities: Callable[[list[CapabilityMetadata], int], None] | None = None,
        forget_capabilities: Callable[[list[str]], None] | None = None,
        max_workers: int = 4096,
        artifacts: ArtifactReader | None = None,
    ) -> None:
        self._runs = runs
        self._read_artifacts = (artifacts or ArtifactReader()).read
        self.max_workers = max_workers
        self._record_capabilities = record_capabilities
        self._send = send
        self._deliver = deliver
        self._record_dispatch = record_dispatch
        self.heartbeat_ms = heartbeat_ms
        self.liveness = liveness
        self.max_value_bytes = max_value_bytes
        self.registry = WorkerRegistry()
        self._pending = PendingQueue()
        self._clocks = StepClocks(runs=runs, deliver=deliver, schedule_to_start_ms=schedule_to_start_ms)
        self.on_ready: list[Callable[[WorkerInfo, Ready, int], None]] = []
        self._room = CatalogueRoom(self.registry, runs, self._pending, forget_capabilities)
        self._in_ready = False
        self._liveness = Liveness(heartbeat_ms=heartbeat_ms, liveness=liveness)
        self.oversized = OversizedInvokes(registry=self.registry, runs=runs, answer=self.outcome, resend=self.dispatch)
        self._changed = anyio.Event()
        self.draining = self.log_debug = False
        #: Worker messages refused, by reason (``takeover``, ``outcome_session``, ``too_many_workers``, ``heartbeat_unknown``).
        self.refused: Counter[str] = Counter()
        self.ignored = IgnoredOutcomes()  #: Outcomes not applied, by reason (``_ignored.py``: logged within a budget)
        self.readys_refused = RefusedReadys()  #: Readys refused, by reason, likewise
        #: The attempts recovered after a restart and who may reclaim them (``_reclaim.py``).
        self.reclaims = Reclaims(registry=self.registry, runs=runs, deliver=deliver, awaiting=self._liveness.awaiting,
                                 stop_clock=self._clocks.stop, refused=self.refused)
        self.reclaims.record_proof = record_proof

    def steps_in_flight(self) -> int:
        """Attempts sent to workers and not answered yet."""
        return sum(len(w.in_flight) for w in self.registry)

    def statistics(self) -> dict[str, int]:
        """Workers, steps waiting for a worker, steps with a deadline running."""
        return {"workers": len(self.registry), "steps_waiting": len(self._pending),
                "steps_in_flight": self._clocks.running, "steps_awaiting_worker": self._liveness.awaited}

    async def changed(self) -> None:
        """Return at the next worker registration."""
        await self._changed.wait()

    async def wait_for(self, condition: Callable[[WorkerRegistry], bool]) -> None:
        """Return once ``condition(registry)`` holds (checked now and at each registration)."""
        while not condition(self.registry):
            await self._changed.wait()

    def seen(self, identity: bytes, now: int, session: str | None = None) -> WorkerInfo | None:
        """Note that ``identity`` spoke at ``now``; its registration, if it has one (and, when
        ``session`` is given, only if that is the registration's token: a message without it
        is not from the registered worker and keeps nothing alive)."""
        worker = self.registry.get(identity)
        if worker is not None:
            if session is not None:
                if not worker.carries(session):
                    return None
                worker.confirmed = True  # it has our Welcome
            worker.last_seen_ms = now
        return worker

    def count_refused(self, reason: str) -> int:
        """Count a worker message refused for ``reason``; its count when worth a line, else 0."""
        return at_doubling(self.refused, reason)

    def ready(self, identity: bytes, ready: Ready, now: int) -> None:
        """Register (or re-register) a worker announcing itself, or refuse it."""
        if (reason := ready_problem(ready, PROTOCOL_VERSION)) is not None:  # its id, version, slots, capabilities
            self._refuse(identity, ready, reason, now)
            return
        key = key_of(identity)
        held, existing = {tuple(k) for k in ready.holding}, self.registry.get(identity)
        keep = held  # of the replaced registration's steps, those it keeps
        kind = "new" if existing is None else existing.token_kind(ready.session)
        if existing is not None and key != existing.key:  # another CURVE key under a registered identity takes nothing,
            if not self.reclaims.proves_awaited(ready.worker_id, ready.session):  # unless it proves awaited attempts
                self.refused["takeover"] += 1
                log.warning("worker_takeover_refused", worker_id=existing.worker_id, reason="another key")
                return
            kind = "other"  # the registration it replaces proved nothing (they still await): it goes
        if existing is not None and kind == "stale":  # left queued by a replaced connection
            log.info("worker_ready_stale", worker_id=existing.worker_id)
            return
        if existing is None and len(self.registry) >= self.max_workers:
            if refused := self.count_refused("too_many_workers"):
                log.warning("worker_refused", worker_id=ready.worker_id, reason="too many workers", limit=self.max_workers, refused=refused)
            self._send(identity, Disconnect(reason=f"this orchestrator has its limit of {self.max_workers} workers"))
            return
        if (reason := self._room.room_for(ready.capabilities)) is not None:  # last: a Ready refused otherwise drops nothing
            self._refuse(identity, ready, reason, now)
            return
        if existing is not None and kind == "resent":  # our Welcome was lost: it keeps its steps
            log.info("worker_welcome_resent", worker_id=existing.worker_id, in_flight=len(existing.in_flight))
        elif existing is not None and kind == "other":
            # The registered connection is gone (one per identity): a restarted process, or a forger.
            # It registers afresh, handed none of the old session's steps (lost, or re-dispatched).
            self.refused["takeover"] += 1
            log.warning("worker_session_replaced", worker_id=existing.worker_id, in_flight=len(existing.in_flight),
                        reason="another key, proving its awaited steps" if key != existing.key
                        else "wrong session token" if ready.session else "no session token")
            self.lose(identity, now, "worker_lost")
            existing, keep = None, set()
        session = existing.session if existing is not None else self.reclaims.session_for(ready.worker_id, ready.session, key, now)
        info = WorkerInfo(identity=limited(identity, ready.max_message_bytes), worker_id=ready.worker_id, host=ready.host, pid=ready.pid,
                          capabilities={m.id: m for m in ready.capabilities}, slots=ready.slots, last_seen_ms=now,
                          session=session, key=key,
                          presented=existing.presented if existing is not None else ready.session,
                          confirmed=existing.confirmed if existing is not None else False,
                          domains=[d["domain"] for d in ready.domains if isinstance(d, dict) and isinstance(d.get("domain"), str)],
                          max_message_bytes=ready.max_message_bytes)
        again = existing is not None
        for cap, fields in self.registry.disagreements(identity, ready.capabilities):
            # Steps go to either worker: each runs the contract its own worker declares.
            log.warning("capability_metadata_differs", capability=cap, worker_id=ready.worker_id, fields=fields)
        orphans, kept = self.registry.register(info, keep=keep)
        # Welcome first: a worker drops an Invoke sent before it, and what follows may send one
        # (an awaited attempt it came back without is lost and goes out again, to it).
        self._send(info.identity, Welcome(worker_id=ready.worker_id, heartbeat_ms=self.heartbeat_ms, liveness=self.liveness,
                                          session=session, max_message_bytes=self.max_message_bytes))
        if again:
            # The same worker without these: their Invokes died in a connection it gave up, or
            # came before its Welcome (which it does not run). None ran: they go out again.
            self._liveness.never_received([(o.run_id, o.step_id, o.attempt) for o in orphans])
        if self._record_capabilities is not None:
            self._record_capabilities(list(info.capabilities.values()), now)
        if existing is None:  # a new registration: the recovered attempts awaiting its worker id
            kept += self.reclaims.reclaim(info, held, ready.session, now)
        self._in_ready = True  # what a hook makes known is the peer's word (``know``)
        try:
            for hook in self.on_ready:
                hook(info, ready, now)
        finally:
            self._in_ready = False
        log.info("worker_ready", worker_id=ready.worker_id, host=ready.host, pid=ready.pid, slots=ready.slots, again=again,
                 capabilities=sorted(info.capabilities)[:32], capability_count=len(info.capabilities),  # up to 1,024
                 kept=len(kept), orphaned=len(orphans))
        for cancel in stale_cancels(ready, kept, orphans):  # attempts it holds no longer awaited from it, bounded
            self._send(info.identity, cancel)
        self._orphaned(orphans, now, "worker_lost")
        self._changed.set()
        self._changed = anyio.Event()
        for cap in info.capabilities:
            self._drain_pending(cap, now)

    def _refuse(self, identity: bytes, ready: Ready, reason: str, now: int) -> None:
        self.readys_refused.refused(ready.worker_id, reason, now)
        self._send(identity, Disconnect(reason=reason))

    def know(self, metadata: list[CapabilityMetadata], now: int) -> None:
        """Add capabilities to the catalogue without a worker (the daemon's ``--capabilities``,
        expected domains, or the domains a registering worker announces); the new ones are
        recorded. Those the daemon was given (outside a Ready's handling) are never dropped to
        make room; a peer's announced ones may be, or be refused (``CatalogueRoom.takes``)."""
        if not self._room.takes(metadata, given=not self._in_ready):
            return
        changed = self.registry.know(metadata)
        if changed and self._record_capabilities is not None:
            self._record_capabilities(changed, now)

    def await_worker(self, dispatch: Dispatch, worker_id: str, now: int, proof: bytes | None = None) -> None:
        """Hold a recovered attempt that was sent to ``worker_id`` before a restart until that
        worker registers again (see the module docstring), presenting the session token the
        journaled row ``proof`` proves, when there is one (``_reclaim.SessionProofs``)."""
        self.reclaims.expect(dispatch, worker_id, proof)
        step = InFlight(dispatch.run_id, dispatch.step_id, dispatch.attempt, dispatch.capability, now)
        until = self._liveness.await_worker(step, worker_id, now)
        self._clocks.start(dispatch)
        log.info("step_awaiting_worker", run_id=dispatch.run_id, step_id=dispatch.step_id, attempt=dispatch.attempt,
                 worker_id=worker_id, until_ms=until)

    def outcome(self, identity: bytes, outcome: Outcome, now: int) -> None:
        """Apply a worker's answer to its run, if the attempt is in flight on that worker."""
        key = (outcome.run_id, outcome.step_id, outcome.attempt)
        if (owner := self.registry.answered(key, identity, outcome.session)) is None:
            owner = self.registry.owner_of(key)
            if owner is not None and owner.session != outcome.session and owner.identity == identity:
                self.refused["outcome_session"] += 1  # under the worker's identity, not from its session
            # Not in flight on that worker: re-dispatched after it was lost, or answered
            # already (a re-send after a reconnect), or not from the session it was sent to.
            # Applying it would report a step twice, or a forged answer.
            self.ignored.ignored(outcome, "attempt not in flight on this worker" if self.seen(identity, now, outcome.session)
                                 else "not from a registered worker's session", now)
            return
        if owner.last_seen_ms != now:  # a batch's Outcomes share its time: one write per worker (a Struct's cost 4x a read)
            owner.last_seen_ms = now
        if self._liveness.undelivered_keys or self._clocks.deadlines:  # no calls while both are empty (usual)
            self._liveness.delivered(key)
            self._clocks.stop(key)
        run = self._runs.by_id.get(outcome.run_id)  # ``live`` in line: per Outcome
        if run is None or run.result is not None:
            self.ignored.ignored(outcome, "run not running", now)
        else:
            if outcome.outputs or outcome.segments:  # the nesting and count bounds hold without a size limit too
                outcome = limit_outputs(outcome, self.max_value_bytes)
            self._deliver(run, StepFinished(outcome, now))  # positional: per Outcome
        if self._pending.waiting:
            for cap in owner.capabilities:
                self._drain_pending(cap, now)

    def disconnected(self, identity: bytes, reason: str, now: int, session: str | None = None) -> None:
        """A worker said goodbye (in its session, when ``session`` is given): its in-flight
        steps are lost."""
        worker = self.seen(identity, now, session)
        if worker is not None:
            log.info("worker_disconnected", worker_id=worker.worker_id, reason=reason[:200])  # a peer's text, bounded
            self.lose(identity, now, "worker_lost")

    def lose(self, identity: bytes, now: int, reason: str) -> None:
        """Forget a worker; each of its in-flight steps ends as lost with ``reason``."""
        worker = self.registry.get(identity)
        self._orphaned(self.registry.remove(identity), now, reason)
        if worker is not None:
            for cap in worker.capabilities:
                if not self.registry.offers(cap):
                    self._clocks.unoffered(cap, now)

    def tick(self, now: int) -> None:
        """Heartbeat out, purge every silent worker, end steps that waited too long for one and
        steps past their deadline."""
        self.ignored.tick(now)
        self.readys_refused.tick(now)
        if self._liveness.heartbeat_due(now):
            for worker in list(self.registry):
                self._send(worker.identity, Heartbeat())
        # Declared gone only at the second look (``_pool_clocks.py``).
        for worker in self._liveness.lost_workers(self.registry, now):
            log.warning("worker_lost", worker_id=worker.worker_id, host=worker.host, in_flight=len(worker.in_flight))
            self.lose(worker.identity, now, "worker_lost")
        self.reclaims.lost(self._liveness.given_up(now), now)
        if not self.draining and self._pending.waiting:  # held back on purpose while draining: they resume after the restart
            self._clocks.expire_unavailable(self._pending, self.registry.offers, now)
        self._clocks.expire_deadlines(now, self._liveness.forget_awaited, self._pending, self.registry.offers)

    def dispatch(self, d: Dispatch, now: int, worker: WorkerInfo | None = None) -> None:
        """Send the engine's ``d`` to the least-loaded live worker offering its capability, or
        queue it; with ``worker``, send it to that one (a step that waited, or went elsewhere)."""
        # The Invoke is the in-flight record too, made first (``place`` assigns it as it picks).
        step = Invoke(d.run_id, d.step_id, d.attempt, d.capability, d.inputs, d.context)  # positional: per step
        if worker is not None:
            self.registry.assign(worker, step)
        else:
            if d.deadline_at_ms is not None:  # most steps have none: no call for them
                self._clocks.start(d)
            if self.draining or (worker := self.registry.place(step)) is None:  # picked and assigned: one call
                self._pending.push(d.capability, (d.run_id, d.step_id, d.attempt), Queued(d, now), now)
                log.info("step_queued", run_id=d.run_id, step_id=d.step_id, capability=d.capability)
                return
        invoke = invoke_for(d, now, self._read_artifacts) if d.artifacts or d.deadline_at_ms is not None else step
        if self._record_dispatch is not None:
            run = self._runs.get(d.run_id)
            if run is not None and run.source_hash is not None:
                self._record_dispatch(run, d, worker.worker_id, now, worker.session, worker.key)
        self._send(worker.identity, invoke)
        if self.log_debug:
            log.debug("step_dispatched", run_id=d.run_id, step_id=d.step_id, attempt=d.attempt, capability=d.capability,
                      worker_id=worker.worker_id, input_keys=list(d.inputs))

    def cancel_step(self, run_id: str, step_id: str, attempt: int) -> None:
        """Stop an attempt: unqueue it, or send its worker a Cancel."""
        key = (run_id, step_id, attempt)
        self._clocks.stop(key)
        self._liveness.forget_awaited(key)
        self._pending.remove(key)
        owner = self.registry.owner(run_id, step_id, attempt)
        if owner is not None:  # the slot stays taken until the worker answers (cancelled): it still runs
            self._send(owner.identity, Cancel(run_id=run_id, step_id=step_id, attempt=attempt))

    def _drain_pending(self, capability: str, now: int) -> None:
        if self.draining:
            return
        pending = self._pending
        while capability in pending:
            worker = self.registry.pick(capability)
            if worker is None:
                return
            queued: Any = pending.pop(capability)
            if queued is None:
                return
            self.dispatch(queued.dispatch, now, worker)

    def undelivered(self, identity: bytes, invokes: list[Invoke]) -> None:
        """The ROUTER refused these Invokes for ``identity`` (its connection was gone): they stay in
        flight on it; if it registers again without them, or is lost, they are dispatched again
        as never sent (a non-idempotent step that never ran is not failed as ``worker_lost``)."""
        self._liveness.undelivered(self.registry, identity, invokes)

    def _orphaned(self, steps: list[SentStep], now: int, reason: str) -> None:
        for step in steps:
            key = (step.run_id, step.step_id, step.attempt)
            self._clocks.stop(key)
            run = self._runs.live(step.run_id)
            if self._liveness.take_undelivered(key):
                again = in_flight_dispatch(self._runs, key)
                if again is not None:
                    log.info("step_redispatched", run_id=step.run_id, step_id=step.step_id, attempt=step.attempt,
                             reason="invoke_undelivered")
                    self.dispatch(again, now)
                    continue
            if run is not None:
                self._deliver(run, StepLost(step_id=step.step_id, attempt=step.attempt, reason=reason, now_ms=now))

