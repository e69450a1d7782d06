"""The worker host: runs capability actors and speaks the wire protocol to an orchestrator.

It announces its capabilities with ``Ready`` and answers every ``Invoke`` with the ``Outcome``
the capability base produced. It is an actor on the kernel (``runtime.actor.BatchActor``):
its mailbox is the current session's DEALER, drained in batches by the step runners of its
:class:`~actors.worker._scheduler.StepScheduler` (one at a time, through ``pump``); each
message is dispatched with ``match`` in :meth:`WorkerHost.receive`; time arrives as
:class:`~runtime.actor.Tick` messages (heartbeats and the orchestrator's silence are decided
on them, ``Session.on_tick``; a Tick also starts the perceptions due and answers the steps
that ignored their Cancel past its grace). Answers leave in batches (``SEND_CHUNK``).

Sessions (the Paranoid Pirate worker of the ZeroMQ guide): the connection to the orchestrator
is a session (``_session.py``) on a fresh DEALER; the runners outlive it. When the orchestrator
is silent for ``liveness`` heartbeat intervals (both announced in its ``Welcome``), the host
closes the socket and registers again on a new one after a backoff (``_timers.ReconnectBackoff``)
waited on Ticks (``HostTimers``, which also runs ``host.timers.every`` jobs). Steps keep running
meanwhile. What is answered while no session is up, and what was sent recently, is held
(``_session.AnswerBook``); a new ``Ready`` lists every attempt the host still runs or holds an
answer for (``holding``) and after the ``Welcome`` the held answers are sent once more (an
answer the orchestrator already had is ignored: ``outcome_ignored``). While a step blocks the
event loop, a thread sends the heartbeats (``_stall_beats.StallBeats``) up to its allowance.

Draining (``drain``, or SIGTERM/SIGINT with ``drain_on_signals``): no new step starts, the
running ones get a grace period and their answers are sent, then ``Disconnect``, and ``run``
calls every capability's ``shutdown()``. A step still running after the grace period is
treated by the orchestrator as a lost worker's (a new attempt when idempotent). Exit 0.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from functools import partial
from itertools import repeat
from typing import Any

import anyio
import msgspec
import structlog

from ontoflow.actors.capability import Capability
from ontoflow.actors.worker._announce import say_not_welcomed
from ontoflow.actors.worker._children import end_children
from ontoflow.actors.worker._initialize import DEFAULT_INIT_TIMEOUT_S, hosted, initialize_all, shut_down_all
from ontoflow.actors.worker._intake import InvokeIntake, refusal
from ontoflow.actors.worker._perceptions import Perceptions
from ontoflow.actors.worker._scheduler import DEFAULT_CANCEL_GRACE_S, StepScheduler
from ontoflow.actors.worker._session import AnswerBook, Session, absolute_ipc, default_worker_id, monotonic_ms, tick_ms_for
from ontoflow.actors.worker._stall_allowance import DEFAULT_MAX_STALL_S, StallAllowance
from ontoflow.actors.worker._stall_beats import StallBeats
from ontoflow.actors.worker._stop import StopRequests
from ontoflow.actors.worker._timers import HostTimers, ReconnectBackoff
from ontoflow.actors.worker._welcome import held_window_ms, welcome_problem
from ontoflow.protocols.messages import PROTOCOL_VERSION, Cancel, Disconnect, Heartbeat, Invoke, Observation, Outcome, Ready, Welcome
from ontoflow.runtime.actor import BatchActor, Tick
from ontoflow.runtime.curve import CurveClient
from ontoflow.runtime.transport import DEFAULT_MAX_MESSAGE_BYTES, shared_context

__all__ = ["WorkerHost"]

log = structlog.get_logger()

DEFAULT_GRACE_S = 5.0  #: seconds running steps may take to finish after SIGTERM (``grace_s``)

#: The least time each capability's ``shutdown()`` gets (more with a longer ``grace_s``).
SHUTDOWN_MIN_S = 5.0

GOODBYE_LINGER_MS = 2000  #: how long the last answers and the goodbye may take to leave once the socket closes
_TO_DAEMON = repeat(b"")  #: the identity of every message a host sends (its DEALER's one peer)
WORKER_SPIN_US = 150  #: how long a host polls its socket after sending before it parks (README, "Performance")


class WorkerHost(BatchActor):
    """Hosts capabilities and serves one orchestrator, reconnecting when it goes silent.

    Args:
        capabilities: the capability instances to host (one per capability id).
        address: the orchestrator's ROUTER address.
        slots: how many steps may run here at once (announced; the orchestrator respects it).
        worker_id: a stable name (the routing identity); a random one by default.
        context: the zmq context (``inproc://`` needs the orchestrator's one).
        protocol: the protocol version announced (tests use a wrong one on purpose).
        curve: connect with CURVE (key pair and the orchestrator's public key).
        max_message_bytes: a bigger incoming message makes libzmq drop the connection; announced
            in every ``Ready``, so the orchestrator never sends one (``Ready.max_message_bytes``).
        reconnect_initial_s: the first backoff before registering again (doubles per failure).
        reconnect_max_s: the backoff's ceiling.
        heartbeat_ms: the interval assumed until a Welcome announces the real one.
        liveness: missed intervals assumed until a Welcome announces the real number.
        drain_on_signals: on SIGTERM or SIGINT, drain (see ``drain``) and return from ``run``
            (a worker process; not for a host embedded in another program's process).
        grace_s: how long running steps may take to finish when draining on a signal.
        spin_us: how long to poll the socket after sending answers before parking (0: never).
        init_timeout_s: the most each ``initialize()`` may take (``run`` raises past it; inf: none).
        cancel_grace_s: how long a step may take to stop after its Cancel (``abandon_overdue``).
        parent_pid: with ``drain_on_signals``, stop as on SIGTERM once this parent is gone (``_stop.py``).
        max_stall_s: how long a step may block the loop, beaten for, at most (``_stall_beats``).

    Attributes:
        steps: the step scheduler (slots, queued and running steps); ``sessions``: sessions
            opened; ``registered``: an event set by every Welcome (then replaced).

    Raises:
        CapabilityDefinitionError: two capabilities with one id, or one whose class is not sound
            (``capability.check_hosted``); from ``run``: WorkerRefusedError (``Disconnect``).
    """

    #: Domain manifests announced in every ``Ready``; set before ``run`` (``read_domain_folders``...).
    domains: Sequence[dict[str, Any]] = ()

    def __init__(
        self,
        capabilities: Sequence[Capability],
        *,
        address: str,
        slots: int = 8,
        worker_id: str | None = None,
        context: Any = None,
        protocol: int = PROTOCOL_VERSION,
        curve: CurveClient | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        reconnect_initial_s: float = 1.0,
        reconnect_max_s: float = 32.0,
        heartbeat_ms: int = 1000,
        liveness: int = 3,
        drain_on_signals: bool = False,
        grace_s: float = DEFAULT_GRACE_S,
        spin_us: int = WORKER_SPIN_US,
        init_timeout_s: float = DEFAULT_INIT_TIMEOUT_S,
        cancel_grace_s: float = DEFAULT_CANCEL_GRACE_S,
        parent_pid: int | None = None,
        max_stall_s: float = DEFAULT_MAX_STALL_S,
    ) -> None:
        super().__init__(tick_ms=tick_ms_for(heartbeat_ms), clock=monotonic_ms, spin_us=spin_us)
        self._capabilities = hosted(capabilities, max_message_bytes)  # checked, answers bounded to a message
        self.address = absolute_ipc(address)  # a step's os.chdir must not move it (``absolute_ipc``)
        self.slots, self.worker_id = slots, worker_id or default_worker_id()
        self.context, self._protocol = context, protocol
        self.curve, self.max_message_bytes = curve, max_message_bytes
        self._backoff = ReconnectBackoff(reconnect_initial_s, reconnect_max_s)
        #: Waits and repeated jobs on this host's Ticks (a bridged service's /health).
        self.timers = HostTimers(self.now)
        self.heartbeat_s, self.liveness = heartbeat_ms / 1000, liveness
        self._answers = AnswerBook()
        stall = StallAllowance.of(self._capabilities, max_stall_s)  # by the steps in flight (``_stall_allowance``)
        self.steps = StepScheduler(self._capabilities, slots=slots, answer=self.answer, answer_many=self.answer_many, flush=self.outbox.flush,
                                   hold=self.outbox.holding, cancel_grace_ms=max(0, round(cancel_grace_s * 1000)), seal=self._answers.seal,
                                   stall=stall)
        self.may_spin = self.steps.idle  # a spin window would delay the wake-up of a step waiting on I/O
        self._session: Session | None = None  # the welcomed session, if any
        self._current: Session | None = None  # the session whose socket is read (welcomed or not)
        self.sessions, self.registered = 0, anyio.Event()  # registered: set by every Welcome, then replaced
        self._drain_on_signals = drain_on_signals
        self._stops = StopRequests(self.worker_id, parent_pid, self.timers.sleep)  # a worker process's
        self.grace_s, self.init_timeout_s = grace_s, init_timeout_s
        self._draining = False  # no step is started any more
        self._perceptions = Perceptions(self._capabilities, self.now, self._observed, stall)
        self._beats = StallBeats(self.worker_id, address=self.address, context=context, curve=curve, clock=self.now, allowance=stall)
        self._intake = InvokeIntake(self._capabilities, self.steps, takes=self._takes_invokes, each=partial(BatchActor.receive_batch, self))

    @property
    def session_token(self) -> str:
        """The last Welcome's token, sent with every answer and shown by the next Ready: the daemon's proof of who registered (never logged)."""
        return self._answers.token

    # -- lifecycle -------------------------------------------------------------------------

    async def run(self, *, task_status: anyio.abc.TaskStatus = anyio.TASK_STATUS_IGNORED) -> None:
        """Initialise the capabilities, then register and serve until cancelled or refused.

        Raises:
            WorkerRefusedError, CapabilityInitError: ``Disconnect``; an ``initialize()`` failed.
        """
        started: list[Capability] = []
        try:
            await initialize_all(self._capabilities.values(), started, timeout_s=self.init_timeout_s, own_process=self._drain_on_signals)
            log.info("worker_started", worker_id=self.worker_id, address=self.address, capabilities=sorted(self._capabilities))
            self._beats.start()
            with anyio.CancelScope() as self._scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self.steps.run)
                    tg.start_soon(self.run_timer)
                    tg.start_soon(self.timers.run_jobs)
                    self._perceptions.start(tg, self.now())
                    if self._drain_on_signals:
                        await self._serve_until_signal(tg, task_status)
                    else:
                        task_status.started(self)
                        await self._connection_loop()
                    tg.cancel_scope.cancel()
        finally:
            self._beats.stop()
            self._stops.stopped()  # every step ended: the process need not be ended for them
            self._scope = None
            self._perceptions.start(None, 0)
            self._session = None
            with anyio.CancelScope(shield=True):
                # Not the steps' grace alone (``--grace-s 0``).
                await shut_down_all(started, timeout_s=max(self.grace_s, SHUTDOWN_MIN_S), own_process=self._drain_on_signals)
                if self._drain_on_signals:  # a worker process: what its steps started ends with it (``_children``)
                    await anyio.to_thread.run_sync(end_children)
                if self._draining and self._drain_on_signals and self.context is None:
                    # The goodbye may still sit in libzmq's queue: terminating the process's
                    # context waits for it to leave (at most the linger), then the process may exit.
                    await anyio.to_thread.run_sync(shared_context().destroy, GOODBYE_LINGER_MS)
        if self._failure is not None:
            raise self._failure
        if self._drain_on_signals:  # a thread a capability left running must not hold the exit (``_stop``)
            self._stops.exit_despite_threads()

    async def _serve_until_signal(self, tg: anyio.abc.TaskGroup, task_status: anyio.abc.TaskStatus) -> None:
        with self._stops.listening():  # before anyone knows we started: none missed
            tg.start_soon(self._connection_loop)
            task_status.started(self)
            await self._stops.wait()
            left = await self.drain(self.grace_s)  # a second signal meanwhile is absorbed, not fatal
            self._stops.bound_exit(self.steps.cancel_grace_ms / 1000, left + self.steps.stuck)  # cancelled next

    async def drain(self, grace_s: float) -> int:
        """Stop taking steps, let the running ones finish within ``grace_s`` and send their
        answers, then say ``Disconnect`` to the orchestrator and end the session (no reconnect).

        Args:
            grace_s: how long running steps may still take.

        Returns:
            How many steps were still running when the grace period ended (left unanswered:
            the orchestrator treats them as a lost worker's).
        """
        self._draining = True
        self.steps.close()
        log.info("worker_draining", worker_id=self.worker_id, running=self.steps.busy, queued=self.steps.queued, grace_s=grace_s)
        left = await self.steps.settle(grace_s)
        session = self._current
        if session is not None:
            session.goodbye("worker shutting down", GOODBYE_LINGER_MS)
        log.info("worker_drained", worker_id=self.worker_id, steps_unfinished=left, steps_not_started=self.steps.queued)
        return left

    def statistics(self) -> dict[str, int]:
        """Counts: sessions opened, steps running, steps ``stuck`` (ignored their Cancel), answers held."""
        return {"sessions": self.sessions, "running": len(self.steps), "stuck": self.steps.stuck, **self._answers.statistics()}

    async def _connection_loop(self) -> None:
        while True:
            self.sessions += 1
            session = Session(self, self.sessions, patience=self._backoff.patience())
            welcomed = await session.run()
            if self._draining:
                return  # said goodbye: no new session
            delay_ms = self._backoff.next_ms(welcomed)
            say_not_welcomed(self._backoff.unwelcomed, self.ready_message, self.address, self.worker_id)
            log.warning("orchestrator_unreachable", worker_id=self.worker_id, address=self.address, retry_in_s=round(delay_ms / 1000, 3))
            await self.timers.sleep(delay_ms)  # ends on a Tick: time is a fact here too

    # -- the mailbox ---------------------------------------------------------------------------

    def receive_batch(self, batch: list[tuple[bytes, Any]], now: int) -> None:
        """Handle a batch: its Invokes queued together by the intake, the rest through ``receive``."""
        self._intake.take(batch, now)

    def _takes_invokes(self) -> bool:  # a welcomed session, no drain: an Invoke is queued for the reading runner
        return not self._draining and self._current is not None and self._current.welcomed

    def receive(self, identity: bytes, message: Any, now: int) -> None:
        """Handle one message of the orchestrator, or a Tick of the host's own timer."""
        match message:
            case _ if type(message) is Invoke:  # by exact type (a class pattern costs more)
                if not self._takes_invokes() or message.capability not in self._capabilities:
                    self._refuse(message)
                else:
                    self._intake.enqueue([message], now)
            case Cancel(run_id=run_id, step_id=step_id, attempt=attempt):
                self.steps.cancel((run_id, step_id, attempt), now)
            case Heartbeat():
                pass
            case Tick(now_ms=tick_now):
                self._beats.turned(tick_now)  # the loop turns: no heartbeat from the thread
                self.timers.on_tick(tick_now)
                self.steps.on_tick(tick_now)  # forgets attempts answered long ago; answers the overdue
                self._perceptions.on_tick(tick_now)
                session = self._current
                if session is not None:
                    session.on_tick(tick_now)
                    if self._session is session:
                        self._prune(session.last_heard_ms)
            case Welcome(heartbeat_ms=heartbeat_ms, liveness=liveness, session=token, max_message_bytes=limit):
                self._on_welcome(heartbeat_ms, liveness, token, now, limit)
            case Disconnect(reason=reason):
                session = self._current
                if session is not None:
                    session.refused(reason)
            case _:
                self._intake.unexpected(message)

    def _refuse(self, invoke: Invoke) -> None:
        """A step that cannot run here: answered when its capability is not hosted, else logged."""
        if (outcome := refusal(invoke, self._draining, self._takes_invokes(), self.worker_id)) is not None:
            self.answer(outcome)

    def _on_welcome(self, heartbeat_ms: int, liveness: int, token: str, now: int, limit: int) -> None:
        session = self._current
        if session is None:
            return
        if (problem := welcome_problem(heartbeat_ms, liveness, limit)) is not None:
            log.warning("welcome_invalid", worker_id=self.worker_id, reason=problem)
            return
        self.heartbeat_s, self.liveness, self.tick_ms = heartbeat_ms / 1000, liveness, tick_ms_for(heartbeat_ms)
        self.steps.seen.window_ms = held_window_ms(heartbeat_ms, liveness)  # as answers are held
        self._answers.set_token(token)  # proves this host is the one registered
        self._beats.serve(token, heartbeat_ms)
        if session.on_welcome(now, limit, self._capabilities.values()):  # nothing bigger than the daemon takes
            log.info("worker_registered", worker_id=self.worker_id, session=session.number, heartbeat_ms=heartbeat_ms, liveness=liveness)
            self._welcomed(session)

    async def _read(self) -> None:
        """One batch of the current session (what a step runner calls when it is its turn)."""
        session = self._current
        if session is None:
            return
        try:
            await self.pump(session)
        except anyio.ClosedResourceError:
            return  # the session ended meanwhile
        self.steps.verbose = self.log_info  # read by the batch: its steps need not ask the logger

    # -- what a session calls ------------------------------------------------------------------

    def ready_message(self) -> Ready:
        """The announcement of a new session, listing every attempt still held here."""
        return Ready(protocol=self._protocol, worker_id=self.worker_id, host=socket.gethostname(), pid=os.getpid(),
                     capabilities=[type(c).metadata for c in self._capabilities.values()], slots=self.slots,
                     holding=list(self.steps) + self._answers.keys(), session=self.session_token,
                     domains=list(self.domains), max_message_bytes=self.max_message_bytes)

    def session_started(self, session: Session) -> None:
        """A session opened its socket: the outbox sends on it, a runner reads it."""
        self._current = session
        self.outbox.attach(session.mailbox)
        self.steps.attach(self._read)

    def session_ended(self, session: Session) -> None:
        """A session is closing its socket: what was gathered leaves on it, then nothing is
        sent or read until the next one (the runner reading gets ``ClosedResourceError``)."""
        if self._session is session:
            self._session = None
            self._beats.serve("", self._beats.interval_ms)
        if self._current is session:
            self._current = None
            self.steps.attach(None)
            self.outbox.flush()
            self.outbox.attach(None)

    def _welcomed(self, session: Session) -> None:
        """A session was accepted: send what is held (once more), then send directly."""
        resend, unsent = self._answers.take_all()
        self._session = session
        for body in resend + unsent:
            self.send(b"", body)
            self._answers.resent(body)  # this orchestrator may die before recording it
        if resend or unsent:
            log.info("outcomes_resent", worker_id=self.worker_id, count=len(resend) + len(unsent))
        self.registered.set()
        self.registered = anyio.Event()

    def _prune(self, last_heard_ms: int) -> None:
        """Forget answers sent more than ``held_window_ms`` before the orchestrator was last heard
        from (``monotonic_ms``), while a session is welcomed: it kept talking that long after them,
        so it had them (counted from "now", one that lags, or died, could lose one). Between
        sessions nothing is forgotten."""
        self._answers.prune((last_heard_ms - held_window_ms(self.heartbeat_s * 1000, self.liveness)) / 1000)

    # -- answers -------------------------------------------------------------------------------

    def answer(self, outcome: Outcome) -> None:
        """Send a step's answer in the welcomed session with the others of its batch (the
        scheduler flushes after the steps it ran back to back, or every ``SEND_CHUNK`` of
        them; the outbox at the end of the event-loop turn), or hold it until there is one."""
        if self._session is None:
            self._answers.keep(outcome)
            return
        self.outbox.put(b"", self._answers.sent(outcome))

    def answer_many(self, outcomes: list[Outcome | bytes]) -> None:
        """``answer`` for each of ``outcomes`` (steps answered back to back: ``AnswerBook.seal``'d)."""
        if self._session is None:
            for outcome in outcomes:
                self._answers.keep(outcome)
            return
        self.outbox.put_all(list(zip(_TO_DAEMON, self._answers.sent_many(outcomes))))  # pairs made in C

    def _observed(self, observation: Observation) -> None:
        if self._session is not None:
            self.send(b"", msgspec.structs.replace(observation, session=self.session_token))
        else:
            log.info("observation_dropped", capability=observation.capability, kind=observation.kind, reason="not connected")
