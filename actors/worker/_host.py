"""The worker host: runs capability actors and speaks the wire protocol to an orchestrator.

It announces its capabilities with ``Ready`` and answers every ``Invoke`` with the ``Outcome``
the capability base produced. The work is done by ``slots + 1`` long-lived step runners
(spawning a task costs more than a whole no-op step) that take turns at two jobs:

* **receiving**: one runner at a time reads the session's socket; it handles the control
  messages itself (Cancel, Heartbeat, Welcome, Disconnect) and queues the Invokes;
* **running steps**: a runner takes the next queued step (at most ``slots`` at once) and runs
  it in its own task up to its first wait (see ``_inline``). A step that never waits (a
  no-op, a lookup, a pure transform) is answered at once, and the runner goes on with the
  next queued step or back to the socket, with no task switch at all; a step that waits makes
  its runner wake one idle runner first (to receive, or to take the next step), so waiting
  steps run concurrently. The extra runner guarantees someone can always read the socket,
  so a Cancel or a heartbeat is seen even with every slot busy.

``Cancel`` stops exactly its step: a queued one never starts, a running one gets its runner
task cancelled (``Task.cancel``, taken back with ``uncancel`` once the step is over; an anyio
cancel scope per step would cost a third of a no-op step) and is answered ``cancelled``.
Perceiving capabilities are polled at their declared interval.

Answers leave in batches: the Outcomes of steps run back to back are sent together when the
queue runs dry (or every ``SEND_CHUNK``), those of steps that waited at the end of the
event-loop turn they finished in (``Session.send``).

Sessions (the Paranoid Pirate worker of the ZeroMQ guide): the connection to the orchestrator
is a session (``_session.py``) on a fresh DEALER; the runners outlive it. When the orchestrator
is silent for ``liveness`` heartbeat intervals (both announced in its ``Welcome``), the host
closes the socket and registers again on a new one after a backoff of 1 s doubling up to 32 s
(reset by a Welcome). Steps keep running meanwhile.

Not reported twice: an attempt is answered once by this host. An Outcome produced while no
session is up waits in an outbox; an Outcome sent in a session is also kept for one liveness
window plus one interval (it may have gone down a link that was already dead), and from the
moment the orchestrator goes silent until the next Welcome (it may have died before recording
it; once restarted, it waits for this worker's answers). A new ``Ready``
lists every attempt the host still runs or holds an answer for (``holding``); after the
``Welcome`` the held answers are sent once more. The orchestrator applies an Outcome only for
an attempt it has in flight on this worker, so an answer it already had, or one for an attempt
it re-dispatched or ended meanwhile, is ignored and logged (``outcome_ignored``); attempts it
no longer awaits are sent Cancel.

Draining (``drain``, or SIGTERM/SIGINT when the host runs with ``drain_on_signals``, as a
worker process does): the host stops taking steps (an Invoke that arrives, and a step still
queued, are not started), lets the running ones finish within a grace period and sends their
answers, then says ``Disconnect`` and stops; ``run`` then calls every capability's
``shutdown()``. A step still running when the grace period ends is left unanswered: the
Disconnect makes the orchestrator treat it as it treats a lost worker's (a new attempt when
idempotent). A process that drained exits 0.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import time
import uuid
from collections import deque
from collections.abc import Sequence
from typing import Any

import anyio
import msgspec
import structlog

from ontoflow.actors.capability import Capability
from ontoflow.actors.worker._inline import resume
from ontoflow.actors.worker._session import Session
from ontoflow.protocols.events import CANCELLED, UNAVAILABLE
from ontoflow.protocols.messages import PROTOCOL_VERSION, Invoke, Observation, Outcome, Ready
from ontoflow.runtime.codec import encode
from ontoflow.runtime.curve import CurveClient
from ontoflow.runtime.transport import DEFAULT_MAX_MESSAGE_BYTES, shared_context

__all__ = ["WorkerHost"]

log = structlog.get_logger()

_outcome_decoder = msgspec.msgpack.Decoder(Outcome)

StepKey = tuple[str, str, int]

#: Seconds running steps may take to finish after SIGTERM (``grace_s``).
DEFAULT_GRACE_S = 5.0

#: How long the last answers and the goodbye may take to leave once the socket closes.
GOODBYE_LINGER_MS = 2000


class WorkerHost:
    """Hosts capabilities and serves one orchestrator, reconnecting when it goes silent.

    Args:
        capabilities: the capability instances to host (one per capability id).
        address: the orchestrator's ROUTER address.
        slots: how many steps may run here at once (announced; the orchestrator respects it).
        worker_id: a stable name (the routing identity); a random one by default.
        context: the zmq context (``inproc://`` needs the orchestrator's one).
        protocol: the protocol version announced (tests use a wrong one on purpose).
        curve: connect with CURVE (key pair and the orchestrator's public key).
        max_message_bytes: a bigger incoming message makes libzmq drop the connection.
        reconnect_initial_s: the first backoff before registering again (doubles per failure).
        reconnect_max_s: the backoff's ceiling.
        heartbeat_ms: the interval assumed until a Welcome announces the real one.
        liveness: missed intervals assumed until a Welcome announces the real number.
        drain_on_signals: on SIGTERM or SIGINT, drain (see ``drain``) and return from ``run``
            (a worker process; not for a host embedded in another program's process).
        grace_s: how long running steps may take to finish when draining on a signal.

    Raises (from ``run``):
        WorkerRefusedError: when the orchestrator answers with ``Disconnect`` (wrong protocol
            version, invalid announcement); the reason is in the message.
    """

    #: Domain manifests (plain maps) announced with the capabilities in every ``Ready``; set
    #: before ``run`` (``actors.worker.read_domain_folders``, ``bridge_http_domain``).
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
    ) -> None:
        self._capabilities = {type(c).metadata.id: c for c in capabilities}
        self._address = address
        self.slots = slots
        self.worker_id = worker_id or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self._context = context
        self._protocol = protocol
        self._curve = curve
        self._max_message_bytes = max_message_bytes
        self._reconnect = (reconnect_initial_s, reconnect_max_s)
        self.heartbeat_s = heartbeat_ms / 1000
        self.liveness = liveness
        # Every attempt accepted and not answered: None while queued, its runner while running.
        self._running: dict[StepKey, asyncio.Task[Any] | None] = {}
        self._cancel_requested: set[StepKey] = set()
        self._mailbox: deque[Invoke] = deque()
        self._busy = 0  # steps started and not answered: at most ``slots``
        self._idle: list[asyncio.Future[None]] = []  # parked runners, woken one at a time
        self._waking = 0  # runners woken and not yet running: at most one at a time
        self._session: Session | None = None  # the welcomed session, if any
        self._current: Session | None = None  # the session whose socket is read (welcomed or not)
        self._receiving = False  # a runner is reading the current session's socket
        self._outbox: dict[StepKey, Outcome] = {}  # answered while no session was up
        # Sent, maybe down a dead link: kept encoded, because at full speed a liveness window
        # holds a hundred thousand answers and bytes cost the garbage collector nothing.
        self._recent: deque[tuple[float, StepKey, msgspec.Raw]] = deque()
        self.sessions = 0
        #: The token of the last Welcome: sent with every answer and presented by the next
        #: Ready, so the daemon knows this host is the one it registered (never logged).
        self.session_token = ""
        self._token_tail = b""  # the token as a msgpack string, stamped onto encoded Outcomes
        self.registered = anyio.Event()  # set by every Welcome, then replaced
        self._drain_on_signals = drain_on_signals
        self.grace_s = grace_s
        self._draining = False  # no step is started any more
        self._quiet: anyio.Event | None = None  # set when the last running step is answered

    # -- lifecycle -------------------------------------------------------------------------

    async def run(self, *, task_status: anyio.abc.TaskStatus = anyio.TASK_STATUS_IGNORED) -> None:
        """Initialise the capabilities, then register and serve until cancelled or refused.

        Raises:
            WorkerRefusedError: when the orchestrator sends ``Disconnect``.
        """
        started: list[Capability] = []
        try:
            for cap in self._capabilities.values():
                await cap.initialize()
                started.append(cap)
            log.info("worker_started", worker_id=self.worker_id, address=self._address, capabilities=sorted(self._capabilities))
            async with anyio.create_task_group() as tg:
                for _ in range(self.slots + 1):  # one more: someone can always read the socket
                    tg.start_soon(self._step_runner)
                for cap in self._capabilities.values():
                    if type(cap).metadata.perceive_interval_ms > 0:
                        tg.start_soon(self._perceive_loop, cap)
                if self._drain_on_signals:
                    await self._serve_until_signal(tg, task_status)
                    tg.cancel_scope.cancel()
                else:
                    task_status.started(self)
                    await self._connection_loop()
        finally:
            self._session = None
            with anyio.CancelScope(shield=True):
                for cap in reversed(started):
                    try:
                        await cap.shutdown()
                    except Exception as exc:  # a broken shutdown must not hide the others
                        log.warning("capability_shutdown_failed", capability=type(cap).metadata.id, error=type(exc).__name__)
                if self._draining and self._drain_on_signals and self._context is None:
                    # The goodbye may still sit in libzmq's queue: terminating the process's
                    # context waits for it to leave (at most the linger), then the process may exit.
                    await anyio.to_thread.run_sync(shared_context().destroy, GOODBYE_LINGER_MS)

    async def _serve_until_signal(self, tg: anyio.abc.TaskGroup, task_status: anyio.abc.TaskStatus) -> None:
        # The receiver is open before anyone can know this host started: no SIGTERM is missed.
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            tg.start_soon(self._connection_loop)
            task_status.started(self)
            async for signum in signals:
                log.info("worker_stopping", worker_id=self.worker_id, signal=signal.Signals(signum).name)
                break
            await self.drain(self.grace_s)  # a second signal meanwhile is absorbed, not fatal

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
        log.info("worker_draining", worker_id=self.worker_id, running=self._busy, queued=len(self._mailbox), grace_s=grace_s)
        if self._busy:
            self._quiet = anyio.Event()
            with anyio.move_on_after(grace_s):
                await self._quiet.wait()
        left = self._busy
        session = self._current
        if session is not None:
            session.goodbye("worker shutting down", GOODBYE_LINGER_MS)
        log.info("worker_drained", worker_id=self.worker_id, steps_unfinished=left, steps_not_started=len(self._mailbox))
        return left

    def statistics(self) -> dict[str, int]:
        """Counts for observability: sessions opened, steps running, answers held back."""
        return {"sessions": self.sessions, "running": len(self._running), "outbox": len(self._outbox), "recent": len(self._recent)}

    async def _connection_loop(self) -> None:
        initial, ceiling = self._reconnect
        backoff = initial
        while True:
            self.sessions += 1
            session = Session(self, self.sessions)
            welcomed = await session.run()
            if self._draining:
                return  # said goodbye: no new session
            if welcomed:
                backoff = initial
            log.warning("orchestrator_unreachable", worker_id=self.worker_id, address=self._address, retry_in_s=backoff)
            await anyio.sleep(backoff)
            if not welcomed:
                backoff = min(backoff * 2, ceiling)

    # -- what a session calls ------------------------------------------------------------------

    def ready_message(self) -> Ready:
        """The announcement of a new session, listing every attempt still held here."""
        holding = list(self._running) + list(self._outbox)
        holding += [key for _, key, _ in self._recent]
        return Ready(
            protocol=self._protocol,
            worker_id=self.worker_id,
            host=socket.gethostname(),
            pid=os.getpid(),
            capabilities=[type(c).metadata for c in self._capabilities.values()],
            slots=self.slots,
            holding=holding,
            session=self.session_token,
            domains=list(self.domains),
        )

    def set_session_token(self, token: str) -> None:
        """Keep the token of a Welcome: this host's answers carry it from now on."""
        self.session_token = token
        self._token_tail = msgspec.msgpack.encode(token)

    def welcomed(self, session: Session) -> None:
        """A session was accepted: send what is held (once more), then send directly."""
        resend = list(self._recent)
        outbox = list(self._outbox.values())
        self._recent.clear()
        self._outbox.clear()
        self._session = session
        now = time.monotonic()
        for _, key, body in resend:
            stamped = self._stamped(body)
            session.send(stamped)
            # Sent once more, and kept once more: this orchestrator may die before recording it.
            self._recent.append((now, key, stamped))
        for outcome in outbox:
            self._deliver(outcome)
        if resend or outbox:
            log.info("outcomes_resent", worker_id=self.worker_id, count=len(resend) + len(outbox))
        self.registered.set()
        self.registered = anyio.Event()

    def session_started(self, session: Session) -> None:
        """A session opened its socket: a runner is to read it from now on."""
        self._current = session
        self._wake_runner()

    def session_ended(self, session: Session) -> None:
        """A session closed its socket (the runner reading it gets ``ClosedResourceError``)."""
        if self._session is session:
            self._session = None
        if self._current is session:
            self._current = None

    def prune(self, last_heard: float) -> None:
        """Forget answers sent more than a liveness window plus one interval before the
        orchestrator was last heard from (``time.monotonic()``), while a session is welcomed:
        it kept talking that long after them, so it had them (measured from ``now`` instead,
        an orchestrator that lags under load, or died, could lose one it never recorded).
        Between sessions nothing is forgotten: a restarted orchestrator awaits those answers."""
        if self._session is not None:
            self._prune_recent(last_heard)

    def _prune_recent(self, now: float) -> None:
        horizon = now - self.heartbeat_s * (self.liveness + 1)
        recent = self._recent
        while recent and recent[0][0] < horizon:
            recent.popleft()

    def enqueue(self, invoke: Invoke, *, wake: bool = True) -> Outcome | None:
        """Queue a step for a runner; returns an immediate answer when it cannot run here.

        Args:
            wake: wake an idle runner for it; a runner that queues steps itself passes False,
                as it goes on to run them.
        """
        if self._draining:
            # Not started and not answered: the coming Disconnect hands it back to the
            # orchestrator as a lost worker's step.
            log.info("invoke_refused_draining", run_id=invoke.run_id, step_id=invoke.step_id, attempt=invoke.attempt)
            return None
        if invoke.capability not in self._capabilities:
            return Outcome(
                run_id=invoke.run_id,
                step_id=invoke.step_id,
                attempt=invoke.attempt,
                event=UNAVAILABLE,
                reason="not_hosted",
                error=f"capability {invoke.capability!r} is not hosted by worker {self.worker_id}",
            )
        key = (invoke.run_id, invoke.step_id, invoke.attempt)
        if key in self._running:
            log.warning("invoke_duplicate", run_id=invoke.run_id, step_id=invoke.step_id, attempt=invoke.attempt)
            return None
        # Registered now, so a Cancel that arrives before a runner picks the step up still finds it.
        self._running[key] = None
        self._mailbox.append(invoke)
        if wake:
            self._wake_runner()
        return None

    def _wake_runner(self) -> None:
        if self._waking or not self._idle:
            return
        self._waking += 1
        self._idle.pop().set_result(None)

    def cancel(self, run_id: str, step_id: str, attempt: int) -> None:
        """Cancel a running or queued attempt (an unknown one is already over: nothing to do)."""
        key = (run_id, step_id, attempt)
        if key not in self._running or key in self._cancel_requested:
            return
        self._cancel_requested.add(key)
        runner = self._running[key]
        if runner is not None:
            runner.cancel()  # the step is the only thing this runner awaits right now

    # -- steps ---------------------------------------------------------------------------------

    def _deliver(self, outcome: Outcome) -> None:
        session = self._session
        key = (outcome.run_id, outcome.step_id, outcome.attempt)
        if session is None:
            self._outbox[key] = outcome
            return
        encoded = encode(outcome)
        if self.session_token and not outcome.session:
            # ``session`` is the last field of an array-like Outcome: its empty string is the
            # body's last byte (0xa0), replaced by the token (a concatenation instead of a
            # second Outcome per step, which costs about 2 us).
            encoded = encoded[:-1] + self._token_tail
        body = msgspec.Raw(encoded)
        session.send(body)
        self._recent.append((time.monotonic(), key, body))

    def _stamped(self, body: msgspec.Raw) -> msgspec.Raw:
        """An answer sent in an earlier session, with the current session's token."""
        outcome = _outcome_decoder.decode(body)
        if outcome.session == self.session_token:
            return body
        return msgspec.Raw(encode(msgspec.structs.replace(outcome, session=self.session_token)))

    def _has_work_for_another(self) -> bool:
        """Whether an idle runner would find something to do: a step it may start, or the
        socket with no one reading it."""
        if self._mailbox and self._busy < self.slots and not self._draining:
            return True
        return self._current is not None and not self._receiving

    async def _step_runner(self) -> None:
        """Run queued steps, else read the socket, else park; forever (see the module docstring)."""
        mailbox = self._mailbox
        loop = asyncio.get_running_loop()
        runner = asyncio.current_task()
        assert runner is not None
        while True:
            if mailbox and self._busy < self.slots and not self._draining:
                await self._run_next(mailbox.popleft(), runner)
                continue
            session = self._current
            if session is not None and not self._receiving:
                self._receiving = True
                try:
                    await session.receive()
                finally:
                    self._receiving = False
                continue
            wake = loop.create_future()
            self._idle.append(wake)
            try:
                await wake
            finally:
                if wake.done() and not wake.cancelled():
                    self._waking -= 1
                else:  # cancelled while parked (the host stops): no longer idle
                    self._idle.remove(wake)

    async def _run_next(self, invoke: Invoke, runner: asyncio.Task[Any]) -> None:
        """Run one queued step in ``runner`` (the calling task), unless it was cancelled while
        queued, and deliver its answer."""
        key = (invoke.run_id, invoke.step_id, invoke.attempt)
        running = self._running
        if key not in running:
            return
        outcome: Outcome | None = None
        waited = False
        if key not in self._cancel_requested:  # else cancelled while queued: never started
            running[key] = runner
            self._busy += 1
            coro = self._capabilities[invoke.capability].invoke(invoke)
            try:
                # The step's first slice runs right here (``_inline``): most steps end in it.
                try:
                    pending = coro.send(None)
                except StopIteration as stop:
                    outcome = stop.value
                else:
                    waited = True
                    # The step waits: another runner takes the socket or the next step meanwhile.
                    if self._has_work_for_another():
                        self._wake_runner()
                    outcome = await resume(coro, pending)
            except asyncio.CancelledError:
                if key not in self._cancel_requested:
                    raise  # the host itself is being cancelled
            finally:
                self._busy -= 1
                if key in self._cancel_requested:
                    # Take back exactly the cancellation this host asked for (whether the step
                    # saw it or finished first), so the runner is not left "cancelling".
                    runner.uncancel()
        self._cancel_requested.discard(key)
        running.pop(key, None)
        if outcome is None:  # a Cancel arrived for this step
            outcome = Outcome(
                run_id=invoke.run_id,
                step_id=invoke.step_id,
                attempt=invoke.attempt,
                event=CANCELLED,
                reason="cancelled",
            )
        self._deliver(outcome)
        if self._quiet is not None and not self._busy:
            self._quiet.set()  # the last running step of a drain is answered
        if not waited and not self._mailbox:
            # The last of the steps run back to back: their answers leave now, together.
            session = self._session
            if session is not None:
                session.flush()

    async def _perceive_loop(self, cap: Capability) -> None:
        interval = type(cap).metadata.perceive_interval_ms / 1000
        while True:
            try:
                observations: list[Observation] = await cap.perceive()
            except Exception as exc:  # perception must never take the host down
                log.warning("perceive_failed", capability=type(cap).metadata.id, error=type(exc).__name__)
                observations = []
            session = self._session
            for observation in observations:
                if session is not None:
                    session.send(msgspec.structs.replace(observation, session=self.session_token))
                else:
                    log.info("observation_dropped", capability=observation.capability, kind=observation.kind, reason="not connected")
            await anyio.sleep(interval)
