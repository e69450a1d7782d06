"""One session of a worker host with its orchestrator: a fresh DEALER, Ready, Welcome, serve.

A session ends when the orchestrator has been silent for ``liveness`` heartbeat intervals
(any message counts as a sign of life); the host then opens a new one after its backoff. The
host's step runners and held answers live on in ``WorkerHost``; a session only carries
messages (see ``_host.py`` for why nothing is reported twice).

The socket is read by the host's step runners, one at a time (``receive``): the session only
interprets what arrives. Sends are gathered and leave together (``DealerSocket.send_many``):
at the end of the event-loop turn (``send``), or at once when a runner has answered the last
of the steps it ran back to back (``flush``); the Outcomes of one Invoke batch then cost one
ZeroMQ message and one wake-up of the orchestrator instead of one each.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

import anyio
import msgspec
import structlog

from ontoflow.actors.errors import WorkerRefusedError
from ontoflow.protocols.messages import Cancel, Disconnect, Heartbeat, Invoke, Welcome, WireMessage
from ontoflow.runtime.batching import SEND_CHUNK  # messages gathered before they leave mid-turn
from ontoflow.runtime.transport import DealerSocket, open_dealer

if TYPE_CHECKING:
    from ontoflow.actors.worker._host import WorkerHost

__all__ = ["SEND_CHUNK", "Session"]

log = structlog.get_logger()


class Session:
    """A connection attempt and, once welcomed, a live registration. Run it once."""

    def __init__(self, host: WorkerHost, number: int) -> None:
        self._host = host
        self.number = number
        self.welcomed = False
        self._dealer: DealerSocket | None = None
        self._last_heard = 0.0
        self._rearm = anyio.Event()  # set by the Welcome: the interval changed
        self._out: list[WireMessage | msgspec.Raw] = []
        self._flush_scheduled = False
        self._refused: str | None = None  # the reason of a Disconnect
        self._leaving = False  # this host said goodbye: the session ends, no reconnect

    async def run(self) -> bool:
        """Connect, register and serve until the orchestrator goes silent.

        Returns:
            Whether the orchestrator welcomed this session at some point.

        Raises:
            WorkerRefusedError: when the orchestrator sends ``Disconnect``.
            runtime.errors.TransportError: when the address cannot be connected to at all.
        """
        host = self._host
        async with open_dealer(
            host._address,
            identity=host.worker_id.encode(),
            context=host._context,
            curve=host._curve,
            max_message_bytes=host._max_message_bytes,
        ) as dealer:
            self._dealer = dealer
            dealer.send(host.ready_message())
            self._last_heard = time.monotonic()
            host.session_started(self)
            try:
                await self._watchdog()
            finally:
                self._dealer = None
                host.session_ended(self)
        if self._refused is not None:
            raise WorkerRefusedError(self._refused)
        return self.welcomed

    def send(self, message: WireMessage | msgspec.Raw) -> None:
        """Send on this session's socket once the current event-loop turn is over, with the
        other messages of the turn (dropped when the session is over by then). A message may
        come already encoded (``msgspec.Raw``, see ``runtime.codec.pack``)."""
        if self._dealer is None:
            return
        self._out.append(message)
        if len(self._out) >= SEND_CHUNK:
            self._flush()  # the orchestrator starts on these while the turn goes on
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def goodbye(self, reason: str, linger_ms: int) -> None:
        """Send what is gathered and ``Disconnect(reason)`` now, then end the session; what is
        still queued on the socket may leave for ``linger_ms`` after it closes."""
        dealer = self._dealer
        if dealer is None:
            return
        self._out.append(Disconnect(reason=reason, session=self._host.session_token))
        self._flush()
        dealer.linger_on_close(linger_ms)
        self._leaving = True
        self._rearm.set()  # wakes the watchdog, which ends the session

    def flush(self) -> None:
        """Send what ``send`` gathered now, without waiting for the end of the loop turn."""
        if self._out:
            self._flush()

    def _flush(self) -> None:
        self._flush_scheduled = False
        out, self._out = self._out, []
        dealer = self._dealer
        if dealer is not None:
            try:
                dealer.send_many(out)
            except anyio.ClosedResourceError:
                pass  # the session ended meanwhile: held outcomes are re-sent by the next one

    async def _watchdog(self) -> None:
        """Heartbeat out every interval; return once the orchestrator has been silent too long."""
        host = self._host
        while True:
            with anyio.move_on_after(host.heartbeat_s):
                await self._rearm.wait()
            if self._refused is not None or self._leaving:
                return
            if self._rearm.is_set():  # welcomed: heartbeat at once, then at the announced interval
                self._rearm = anyio.Event()
                self.send(Heartbeat(session=host.session_token))
                continue
            host.prune(self._last_heard)
            silent_s = time.monotonic() - self._last_heard
            if silent_s > host.heartbeat_s * host.liveness:
                log.warning(
                    "orchestrator_silent",
                    worker_id=host.worker_id,
                    session=self.number,
                    silent_ms=round(silent_s * 1000),
                    welcomed=self.welcomed,
                )
                return
            if self.welcomed:
                self.send(Heartbeat(session=host.session_token))

    async def receive(self) -> None:
        """Wait for the next batch of messages and act on it; returns after one batch, or at
        once when the session's socket is closed (or closes meanwhile).

        Called by one step runner at a time. Invokes are queued for the calling runner to run
        (``WorkerHost.enqueue`` without a wake-up); a ``Disconnect`` ends the session, whose
        ``run`` then raises ``WorkerRefusedError``.
        """
        dealer = self._dealer
        if dealer is None:
            return
        try:
            batch = await dealer.recv_batch()
        except anyio.ClosedResourceError:
            return  # the session ended meanwhile
        self._last_heard = time.monotonic()
        host = self._host
        for message in batch:
            match message:
                case Invoke():
                    refusal = host.enqueue(message, wake=False)
                    if refusal is not None:
                        host._deliver(refusal)
                case Cancel(run_id=run_id, step_id=step_id, attempt=attempt):
                    host.cancel(run_id, step_id, attempt)
                case Heartbeat():
                    pass
                case Welcome(heartbeat_ms=heartbeat_ms, liveness=liveness, session=token):
                    if heartbeat_ms < 1 or liveness < 1:
                        log.warning("welcome_invalid", worker_id=host.worker_id, reason="heartbeat_ms and liveness must be >= 1")
                        continue
                    host.heartbeat_s = heartbeat_ms / 1000
                    host.liveness = liveness
                    host.set_session_token(token)  # proves this host is the one registered
                    self._rearm.set()
                    if not self.welcomed:
                        self.welcomed = True
                        log.info("worker_registered", worker_id=host.worker_id, session=self.number, heartbeat_ms=heartbeat_ms, liveness=liveness)
                        host.welcomed(self)
                case Disconnect(reason=reason):
                    log.error("worker_refused", worker_id=host.worker_id, reason=reason)
                    self._refused = reason
                    self._rearm.set()  # the watchdog returns and ``run`` raises
                    return
                case _:
                    log.warning("message_unexpected", op=type(message).__name__)
