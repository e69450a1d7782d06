"""The orchestrator's mailbox: who may send it what, what each message it receives becomes,
and how it serves while its journal cannot be written.

Every message of a batch (and the timer's :class:`~runtime.actor.Tick`) is dispatched here on
its type: an Outcome, a Ready, a Heartbeat, a Disconnect go to the worker pool; a Tick runs
the pool's clock (heartbeats out, silent workers lost, deadlines) and ends the runs and the
questions whose time is up; an Observation goes to its observers (triggers); a client API
message to the client handler. A message the sender's key may not send is refused first
(:class:`Authority`, below).

A journal commit that fails (a full disk) makes the orchestrator *unavailable* until a retry
of it succeeds (the outbox retries with backoff): nothing the failed batch caused is sent, and
nothing new is decided. The messages that would record a fact (Outcome, Ready, Disconnect,
Observation) are parked, in arrival order and bounded (:class:`ParkingLot`), and handled first
once the commit succeeded; Ticks decide nothing (only heartbeats go out, so workers stay
connected; deadlines are looked at again by the first Tick after); clients' reads are answered,
from committed state for a run the held batch touches, and their writes are refused
``unavailable`` (``ClientService``).

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

Who may say what (:class:`Authority`): roles of CURVE keys, and checks of Observations. With
CURVE, every message arrives from a ``runtime.transport.Peer`` carrying the public key its
connection authenticated with (``user_id``). The daemon gives each key a set of roles
(``runtime.curve.load_roles``): a ``worker`` key may register and send Outcomes, Heartbeats,
Observations and Disconnect; a ``client`` key may use the client API for its own runs; an
``admin`` key may do everything. Without CURVE there is no key: roles are not enforced
(``roles=None``), which the daemon says once at start.

Observations, CURVE or not, are accepted only with bounded words
(``protocols.messages.observation_problem``), from a registered worker (in its session) that
offers the capability they name, with ``data`` matching the capability's declared
``observation_schema``; what does not is dropped and counted by reason.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, get_args

import msgspec
import structlog

from ontoflow.actors.capability._schema import compile_schema
from ontoflow.actors.errors import CapabilityDefinitionError
from ontoflow.actors.orchestrator._parking import ParkingLot
from ontoflow.actors.orchestrator.engine import Fact, RunCancelled, RunExpired
from ontoflow.protocols.client import CancelRun, ClientMessage, Error
from ontoflow.protocols.messages import (
    STALL_BEAT_SUFFIX,
    Disconnect,
    Heartbeat,
    Observation,
    Outcome,
    Ready,
    observation_problem,
)
from ontoflow.runtime.actor import Outbox, Tick, where
from ontoflow.runtime.batching import SEND_CHUNK
from ontoflow.runtime.curve import ADMIN, CLIENT, WORKER
from ontoflow.runtime.log_budget import at_doubling

if TYPE_CHECKING:  # annotations only: the pool and the table import this module's key_of
    from ontoflow.actors.orchestrator._registry import WorkerInfo
    from ontoflow.actors.orchestrator._run_table import Run, RunTable
    from ontoflow.actors.orchestrator._worker_pool import WorkerPool

__all__ = ["ADMIN", "CLIENT", "WORKER", "Authority", "Mailbox", "key_of"]

log = structlog.get_logger()

_WORKER_TYPES = (Ready, Outcome, Heartbeat, Observation, Disconnect)
_CLIENT_TYPES = get_args(ClientMessage)
_CLIENT_KINDS = frozenset(t for c in _CLIENT_TYPES for t in (c, *c.__subclasses__()))  # exact types: see receive
_NONE: frozenset[str] = frozenset()


def _unknown_heartbeat(pool: WorkerPool, identity: bytes) -> None:
    """Count a heartbeat from a peer that is not a registered worker (or not in its session)
    and log it at the 1st, 2nd, 4th, 8th...: any peer may send them, and a line each was a log
    flood at the rate it sends (red team, session 21)."""
    if n := pool.count_refused("heartbeat_unknown"):
        log.warning("heartbeat_from_unknown_peer", peer=identity.hex()[:64], count=n)


def beating_for(identity: bytes) -> bytes:
    """The worker whose event loop a step blocks, when ``identity`` is its heartbeat thread's
    connection (the worker's id, ``STALL_BEAT_SUFFIX``, a random tail: ``actors.worker._stall_beats``),
    else b"" (no worker): its Heartbeat keeps that worker alive when it carries the worker's
    session token and, under CURVE, comes with the worker's own key (``Mailbox._beat``)."""
    head, suffix, _ = identity.partition(STALL_BEAT_SUFFIX)
    return head if suffix else b""


def key_of(identity: bytes) -> str:
    """The CURVE public key (z85) ``identity`` authenticated with; "" without CURVE."""
    return getattr(identity, "user_id", "")


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
        self._turns = 0  # batches received so far: ``turn``

    def receive_batch(self, batch: list[tuple[bytes, Any]], now: int) -> None:
        """``receive`` each message of ``batch`` in order, an exception logged and the next going
        on (``BatchActor.receive_batch``); an Outcome (per step) or a client's request (per run),
        when neither roles, parked messages nor an unavailable journal stand in its way, goes to
        the pool or the client handler without ``receive``'s call."""
        self._turns += 1
        authority, parking, outbox, outcome, receive = self._authority, self.parking, self._outbox, \
            self._pool.outcome, self.receive
        for identity, message in batch:
            try:
                if authority.roles is None and not parking.held and outbox.available:
                    kind = type(message)
                    if kind is Outcome:
                        outcome(identity, message, now)
                        continue
                    if kind in _CLIENT_KINDS and self.client_handler is not None:
                        self.client_handler(identity, message)
                        continue
                receive(identity, message, now)
            except Exception as exc:  # one bad message must not stop every other run
                log.error("message_handling_failed", peer=identity.hex(), op=type(message).__name__,
                          error=type(exc).__name__, where=where(exc))

    def turn(self) -> int:
        """Batches received so far: which turn of the loop this is (the client API's journal
        reads are bounded per turn: ``_queries.Queries``, given this method by the composition)."""
        return self._turns

    def receive(self, identity: bytes, message: Any, now: int) -> None:
        """Dispatch one message on its type."""
        authority, pool = self._authority, self._pool
        if authority.roles is not None and not authority.permitted(identity, message):
            if isinstance(message, _CLIENT_TYPES):
                self._send_client(identity, Error(code="forbidden", message=f"this key may not send {type(message).__name__}"))
            return
        if self.parking.held or not self._outbox.available:  # attributes: no call per message
            if not self._outbox.available:
                self._unavailable(identity, message, now)
                return
            for peer, held in self.parking.take():  # first, in the order they came
                self.receive(peer, held, now)
        # A class pattern costs a microsecond when it fails on a Struct type (__instancecheck__) and
        # 640 instructions when it matches (a set, a list, a tuple): a run's messages go by exact type.
        match message:
            case _ if type(message) is Outcome:  # the hot path: most of what arrives
                pool.outcome(identity, message, now)
            case _ if type(message) in _CLIENT_KINDS:  # a daemon's Submit is a SubmitRequest
                if self.client_handler is None:
                    log.warning("client_request_unserved", peer=identity.hex(), op=type(message).__name__)
                else:
                    self.client_handler(identity, message)
            case Tick(now_ms=tick_now):
                self._tick(tick_now)
            case Heartbeat(session=session):
                if pool.seen(identity, now, session) is None and self._beat(identity, now, session) is None:
                    _unknown_heartbeat(pool, identity)
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
            case _:
                log.warning("message_unexpected", peer=identity.hex(), op=type(message).__name__)

    def _beat(self, identity: bytes, now: int, session: str | None) -> object | None:
        """Credit a heartbeat thread's Heartbeat to its worker (``beating_for``): only with the
        worker's session token, and under CURVE only from the key the worker registered with
        (another admitted key, a client's, keeps no worker alive). The worker, or None."""
        worker_identity = beating_for(identity)
        worker = self._pool.registry.get(worker_identity) if worker_identity else None
        if worker is None or worker.key != key_of(identity):
            return None
        return self._pool.seen(worker_identity, now, session)

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
            case Heartbeat(session=session):
                if pool.seen(identity, now) is None:
                    self._beat(identity, now, session)
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


class Authority:
    """Role checks and Observation checks (see the module docstring).

    Args:
        roles: z85 public key -> its roles; ``None``: roles are not enforced (no CURVE).

    Attributes:
        refused: what was refused, counted by reason (``role``, ``observation_*``).
    """

    def __init__(self, roles: Mapping[str, frozenset[str]] | None = None) -> None:
        self.roles = dict(roles) if roles is not None else None
        self.refused: Counter[str] = Counter()
        self._warned: set[tuple[str, str]] = set()
        self._validators: dict[tuple[str, bytes], Any] = {}

    def roles_of(self, identity: bytes) -> frozenset[str] | None:
        """The roles of the key ``identity`` connected with; ``None`` when not enforced."""
        if self.roles is None:
            return None
        return self.roles.get(key_of(identity), _NONE)

    def permitted(self, identity: bytes, message: Any) -> bool:
        """Whether the key of ``identity`` may send ``message`` (a refusal is counted; the
        first per key and message type is logged with the key's fingerprint)."""
        roles = self.roles
        if roles is None:
            return True
        granted = roles.get(key_of(identity), _NONE)
        if ADMIN in granted:
            return True
        if isinstance(message, _WORKER_TYPES):
            need = WORKER
        elif isinstance(message, _CLIENT_TYPES):
            need = CLIENT
        else:
            return True  # not a peer's message (the actor's own Tick)
        if need in granted:
            return True
        self.refused["role"] += 1
        op = type(message).__name__
        fingerprint = key_of(identity)[:8]
        if (fingerprint, op) not in self._warned and len(self._warned) < 1024:
            self._warned.add((fingerprint, op))
            log.warning("message_refused", op=op, key=fingerprint, needs=need, reason="the key lacks the role")
        return False

    def scoped(self, identity: bytes, idempotency_key: str) -> str:
        """The idempotency key as the daemon keeps it: a client key's own (prefixed with it) when
        roles are enforced, so that another key sending the same one (a guessable key) starts
        its own run instead of being answered with the first key's run (and, with ``wait``, its
        context); an administrator's, and any key without roles, as sent."""
        roles = self.roles_of(identity)
        return idempotency_key if roles is None or ADMIN in roles else f"{key_of(identity)}/{idempotency_key}"

    def may_touch(self, identity: bytes, owner: str | None, message: Any) -> bool:
        """Whether the client ``identity`` may read (or, for ``CancelRun``, cancel) a run
        submitted by the key ``owner`` (``None``: not known here, e.g. recovered or triggered:
        anyone may read it, only an admin cancel it)."""
        roles = self.roles_of(identity)
        if roles is None or ADMIN in roles:
            return True
        key = key_of(identity)
        if owner is None:
            return not isinstance(message, CancelRun)
        if owner == key:
            return True
        self.refused["not_owner"] += 1
        return False

    def observation_ok(self, worker: WorkerInfo | None, observation: Observation) -> bool:
        """Whether ``observation`` may start runs: from a registered ``worker`` (None: the
        peer is not one, or not in its session) offering its capability, with data matching
        that capability's ``observation_schema``."""
        if observation_problem(observation, observation.capability) is not None:
            self.refused["observation_malformed"] += 1  # not logged: its words are what is wrong
            return False
        if worker is None:
            return self._refuse("observation_unregistered", observation)
        meta = worker.capabilities.get(observation.capability)
        if meta is None:
            return self._refuse("observation_not_offered", observation)
        schema = meta.observation_schema
        key = (meta.id, msgspec.msgpack.encode(schema))
        validate = self._validators.get(key)
        if validate is None:
            try:
                validate = compile_schema(meta.id, schema)
            except CapabilityDefinitionError:
                validate = False
            if len(self._validators) >= 1024:
                self._validators.clear()
            self._validators[key] = validate
        if validate is False:
            return self._refuse("observation_schema_invalid", observation)
        try:
            validate(dict(observation.data))
        except Exception:  # fastjsonschema.JsonSchemaValueException, or a schema that misbehaves
            return self._refuse("observation_data_invalid", observation)
        return True

    def _refuse(self, reason: str, observation: Observation) -> bool:
        if n := at_doubling(self.refused, reason):  # a flood writes a few lines, not one per frame
            log.warning("observation_refused", capability=observation.capability, kind=observation.kind,
                        reason=reason, count=n)
        return False
