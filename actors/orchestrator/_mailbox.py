"""The orchestrator's mailbox: what each message it receives becomes, and how it serves while
its journal cannot be written.

Every message of a batch (and the timer's :class:`~runtime.actor.Tick`) is dispatched here on
its type: an Outcome, a Ready, a Heartbeat, a Disconnect go to the worker pool; a Tick runs
the pool's clock (heartbeats out, silent workers lost, deadlines) and ends the runs and the
questions whose time is up; an Observation goes to its observers (triggers); a client API
message to the client handler. A message the sender's key may not send is refused first
(``_authority``).

A journal commit that fails (a full disk) makes the orchestrator *unavailable* until a retry
of it succeeds (the outbox retries with backoff): nothing the failed batch caused is sent, and
nothing new is decided. The messages that would record a fact (Outcome, Ready, Disconnect,
Observation) are parked, in arrival order and bounded (:class:`ParkingLot`), and handled first
once the commit succeeded; Ticks
decide nothing (only heartbeats go out, so workers stay connected; deadlines are looked at
again by the first Tick after); clients' reads are answered, from committed state for a run
the held batch touches, and their writes are refused ``unavailable`` (``ClientService``).

An outage may last minutes and a peer may keep sending, so what is parked is bounded, and what
is dropped is counted by reason (:class:`ParkingLot`):

- an Outcome of an attempt in flight on the peer that sends it is always parked (once per
  attempt): it is acknowledged work, and there are never more of them than steps in flight;
- an Outcome of an attempt not in flight there would be ignored once handled anyway, unless
  the peer registers again first (a parked Ready): only then is it parked, within the cap;
- a peer's Ready and Disconnect: at most ``max_control_per_peer`` (a worker reconnecting in
  a loop re-sends its Ready; the last ones it sent are the ones it still waits on);
- Observations: at most ``max_observations`` (a perception, not an acknowledged request:
  a trigger that misses one is told so by the count);
- everything but the first rule within ``max_messages`` in all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any, get_args

import structlog

from ontoflow.actors.orchestrator._authority import Authority
from ontoflow.actors.orchestrator._run_table import Run, RunTable
from ontoflow.actors.orchestrator._worker_pool import WorkerPool
from ontoflow.actors.orchestrator.engine import Fact, RunCancelled, RunExpired
from ontoflow.protocols.client import ClientMessage, Error
from ontoflow.protocols.messages import Disconnect, Heartbeat, Observation, Outcome, Ready
from ontoflow.runtime.actor import Outbox, Tick
from ontoflow.runtime.batching import SEND_CHUNK

__all__ = ["Mailbox", "ParkingLot"]

log = structlog.get_logger()

_CLIENT_TYPES = get_args(ClientMessage)


class Mailbox:
    """Dispatches an orchestrator's messages to its parts (see the module docstring).

    Args:
        pool: the worker pool (worker messages, the clock of workers and steps).
        runs: the run table (run deadlines and question expiries).
        authority: who may send what.
        outbox: the actor's outbox (whether it is available; heartbeats that bypass it).
        apply: records and applies a fact to a run (``Orchestrator.apply``).
        send_client: sends a client API reply.

    Attributes:
        client_handler: called as ``handler(identity, message)`` for each client API message;
            without one they are logged and dropped.
        on_observation: called with each Observation a worker reports.
        on_tick: called with the time at each tick.
        parking: the messages held while the journal cannot be written (bounded, counted).
    """

    def __init__(self, *, pool: WorkerPool, runs: RunTable, authority: Authority, outbox: Outbox,
                 apply: Callable[[Run, Fact], None], send_client: Callable[[bytes, Any], None]) -> None:
        self._pool = pool
        self._runs = runs
        self._authority = authority
        self._outbox = outbox
        self._apply = apply
        self._send_client = send_client
        self.client_handler: Callable[[bytes, Any], None] | None = None
        self.on_observation: list[Callable[[Observation], None]] = []
        self.on_tick: list[Callable[[int], None]] = []
        self.parking = ParkingLot()
        self._heartbeat_at = 0

    def receive(self, identity: bytes, message: Any, now: int) -> None:
        """Dispatch one message on its type."""
        authority, pool = self._authority, self._pool
        if authority.roles is not None and not authority.permitted(identity, message):
            if isinstance(message, _CLIENT_TYPES):
                self._send_client(identity, Error(code="forbidden", message=f"this key may not send {type(message).__name__}"))
            return
        if self.parking or not self._outbox.available:
            if not self._outbox.available:
                self._unavailable(identity, message, now)
                return
            for peer, held in self.parking.take():  # first, in the order they came
                self.receive(peer, held, now)
        match message:
            case Outcome():  # the hot path: most of what arrives
                pool.outcome(identity, message, now)
            case Tick(now_ms=tick_now):
                self._tick(tick_now)
            case Heartbeat(session=session):
                if pool.seen(identity, now, session) is None:
                    log.warning("heartbeat_from_unknown_peer", peer=identity.hex())
            case Ready():
                pool.seen(identity, now)
                pool.ready(identity, message, now)
                self._resize_chunk()
            case Disconnect(reason=reason, session=session):
                pool.disconnected(identity, reason, now, session)
                self._resize_chunk()
            case Observation():
                if not authority.observation_ok(pool.seen(identity, now, message.session), message):
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

    def _tick(self, now: int) -> None:
        """Time as a fact: the pool's clock, then the runs and questions whose time is up."""
        self._pool.tick(now)
        for callback in self.on_tick:
            callback(now)
        for run in self._runs.expired(now):
            log.warning("run_deadline_expired", run_id=run.run_id)
            self._apply(run, RunCancelled(reason="run deadline expired", now_ms=now))
        for run, token in self._runs.questions_expired(now):
            log.warning("run_question_expired", run_id=run.run_id)
            self._apply(run, RunExpired(token=token, now_ms=now))
        self._resize_chunk()

    def _unavailable(self, identity: bytes, message: Any, now: int) -> None:
        """Serve while the journal cannot be written: decide nothing (see the module docstring)."""
        pool = self._pool
        match message:
            case Tick():
                if now - self._heartbeat_at >= pool.heartbeat_ms:  # workers must not think us gone
                    self._heartbeat_at = now
                    for worker in list(pool.registry):
                        self._outbox.bypass(worker.identity, Heartbeat())
            case Heartbeat():
                pool.seen(identity, now)
            case _ if isinstance(message, _CLIENT_TYPES) and self.client_handler is not None:
                self.client_handler(identity, message)  # reads answered, writes refused
            case _:
                pool.seen(identity, now)
                self.parking.park(identity, message, self._in_flight_on)

    def statistics(self) -> dict[str, int]:
        """Counts of the messages parked while the journal could not be written, by reason."""
        return self.parking.statistics()

    def _in_flight_on(self, run_id: str, step_id: str, attempt: int) -> bytes | None:
        owner = self._pool.registry.owner(run_id, step_id, attempt)
        return None if owner is None else owner.identity

    def _resize_chunk(self) -> None:
        # Without a journal, a long batch's sends start leaving after SEND_CHUNK per worker.
        self._outbox.chunk = SEND_CHUNK * max(len(self._pool.registry), 1)


#: ``in_flight_on(run_id, step_id, attempt)``: the identity of the peer running that attempt.
InFlightOn = Callable[[str, str, int], bytes | None]


class ParkingLot:
    """Messages parked while the journal is unavailable (see the module docstring).

    Args:
        max_messages: parked messages in all, past the Outcomes of steps in flight.
        max_observations: parked Observations.
        max_control_per_peer: parked Ready and Disconnect messages of one peer.

    Attributes:
        dropped: messages dropped since the lot was made, by reason.
        parked_total: messages parked since the lot was made.
    """

    def __init__(self, *, max_messages: int = 10_000, max_observations: int = 1_000,
                 max_control_per_peer: int = 8) -> None:
        self.max_messages = max_messages
        self.max_observations = max_observations
        self.max_control_per_peer = max_control_per_peer
        self.dropped: Counter[str] = Counter()
        self.parked_total = 0
        self._held: list[tuple[bytes, Any]] = []
        self._outcomes: set[tuple[bytes, str, str, int]] = set()
        self._control: Counter[bytes] = Counter()
        self._observations = 0
        self._capped = 0  # held messages the cap counts (not the Outcomes of steps in flight)
        self._dropped_now: Counter[str] = Counter()

    def __len__(self) -> int:
        return len(self._held)

    def __bool__(self) -> bool:
        return bool(self._held)

    def park(self, identity: bytes, message: Any, in_flight_on: InFlightOn) -> bool:
        """Hold ``message`` from ``identity`` for later, or drop it (counted); returns whether held."""
        capped = True
        match message:
            case Outcome(run_id=run_id, step_id=step_id, attempt=attempt):
                key = (identity, run_id, step_id, attempt)
                if key in self._outcomes:
                    return self._drop("outcome_duplicate")
                if in_flight_on(run_id, step_id, attempt) == identity:
                    capped = False
                elif not self._control[identity]:
                    return self._drop("outcome_not_in_flight")
                self._outcomes.add(key)
            case Ready() | Disconnect():
                if self._control[identity] >= self.max_control_per_peer:
                    return self._drop("control_per_peer")
                self._control[identity] += 1
            case Observation():
                if self._observations >= self.max_observations:
                    return self._drop("observations")
                self._observations += 1
        if capped:
            if self._capped >= self.max_messages:
                self._undo(identity, message)
                return self._drop("messages")
            self._capped += 1
        if not self._held:
            log.warning("messages_parked", reason="journal_unavailable")
        self._held.append((identity, message))
        self.parked_total += 1
        return True

    def take(self) -> list[tuple[bytes, Any]]:
        """Everything held, in arrival order, and a clean lot; logs one summary line."""
        held, self._held = self._held, []
        log.info("parked_messages_handled", count=len(held), dropped=dict(self._dropped_now))
        self._outcomes.clear()
        self._control.clear()
        self._observations = self._capped = 0
        self._dropped_now.clear()
        return held

    def statistics(self) -> dict[str, int]:
        """What is held now and what was parked and dropped so far (``dropped_<reason>``)."""
        return {"parked": len(self._held), "parked_total": self.parked_total,
                **{f"dropped_{reason}": n for reason, n in sorted(self.dropped.items())}}

    def _undo(self, identity: bytes, message: Any) -> None:
        # Past the cap after the per-kind checks counted the message in: count it out.
        match message:
            case Outcome(run_id=run_id, step_id=step_id, attempt=attempt):
                self._outcomes.discard((identity, run_id, step_id, attempt))
            case Ready() | Disconnect():
                self._control[identity] -= 1
            case Observation():
                self._observations -= 1

    def _drop(self, reason: str) -> bool:
        if not self._dropped_now:  # one line per outage; the summary comes with take()
            log.warning("parked_message_dropped", reason=reason)
        self.dropped[reason] += 1
        self._dropped_now[reason] += 1
        return False
