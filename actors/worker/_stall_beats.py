"""Heartbeats from a thread of the worker's own while a step blocks its event loop.

A capability that blocks the loop (``time.sleep(5)``, CPU work, a blocking client inside
``async def execute``) stopped every heartbeat of its worker: the heartbeats leave on the
loop's Ticks. The daemon took the worker as lost a liveness window later, and its steps (the
blocking one too, still running) were tried again elsewhere or failed ``worker_lost``. A user
of Temporal or Ray expects a busy worker to be a live one: their workers' liveness is kept by
a thread of their own (Temporal's core, Ray's core-worker thread), not by the user's code.

:class:`StallBeats` is that thread. The loop tells it at every Tick that it turned
(``turned``); when it has not turned for a heartbeat interval, the thread sends the Heartbeat
itself, on a DEALER of its own (a ZeroMQ socket belongs to one thread: the session's cannot be
touched from here), whose identity is the worker's, ``STALL_BEAT_SUFFIX`` and a random tail
drawn per process: a peer that took a guessable identity first would have held its route (the
ROUTER keeps the first connection under an identity), and the thread's beats would have gone
nowhere. The daemon keeps the worker alive on it when it carries the worker's session token
(which nobody else knows), under CURVE only from the worker's own key, as on the session's own
Heartbeat. The connection is made when the first Welcome is served, not at the first stall.

What "hung" means: a loop that has not turned for longer than the steps running at the moment
may take blocking it, the ``allowance`` (``_stall_allowance.StallAllowance``: the longest
allowance of the steps in flight, each its capability's ``timeout_ms`` plus a grace, at most
``max_stall_s``). Past it the thread stops beating and logs ``event_loop_hung``: the daemon
takes the worker as lost a liveness window later, as a dead or stopped (SIGSTOP) process,
whose thread beats no more either. The thread needs the GIL: a C call holding it longer than the liveness window is not
told from a hang.
"""

from __future__ import annotations

import math
import secrets
import threading
from typing import Any

import structlog
import zmq

from ontoflow.actors.worker._stall_allowance import DEFAULT_MAX_STALL_S, StallAllowance, stall_allowance_ms
from ontoflow.protocols.messages import STALL_BEAT_SUFFIX, Heartbeat
from ontoflow.runtime.codec import HEADER, encode
from ontoflow.runtime.curve import CurveClient
from ontoflow.runtime.log_budget import at_doubling
from ontoflow.runtime.transport import shared_context

__all__ = ["DEFAULT_MAX_STALL_S", "StallBeats", "beat_due", "stall_allowance_ms"]

log = structlog.get_logger()

#: The longest routing identity ZeroMQ takes.
_MAX_IDENTITY_BYTES = 255


def beat_due(now: int, turned: int, last_beat: int, interval_ms: float, allowance_ms: float) -> bool:
    """Whether the thread sends a Heartbeat at ``now``: the loop has not turned since
    ``turned`` for an interval or more, not past ``allowance_ms`` (hung), and the thread's own
    last one (``last_beat``) is an interval old."""
    stalled = now - turned
    return interval_ms <= stalled <= allowance_ms and now - last_beat >= interval_ms


class StallBeats:
    """The heartbeat thread of a worker host (see the module docstring). Start it once.

    Args:
        worker_id: the worker's id (its session's routing identity).
        address, context, curve: where and how the worker's session connects.
        allowance: how long the loop may stay blocked, by the steps in flight (read at each
            wake); or ``allowance_ms``: a fixed allowance.
        clock: the host's clock (milliseconds; the one its Ticks carry).

    Attributes:
        identity: the thread's routing identity (the worker's id, ``STALL_BEAT_SUFFIX``, a
            random tail drawn here).
        token: the welcomed session's token, "" while none is (no Heartbeat is sent then).
        interval_ms: the heartbeat interval of the last Welcome.
    """

    def __init__(self, worker_id: str, *, address: str, context: Any, curve: CurveClient | None,
                 allowance: StallAllowance | None = None, allowance_ms: float = 0.0, clock: Any) -> None:
        self._worker_id = worker_id
        self.identity = worker_id.encode() + STALL_BEAT_SUFFIX + secrets.token_bytes(8)  # any bytes: 8 of them
        self._address = address
        self._context = context
        self._curve = curve
        self.allowance = allowance if allowance is not None else StallAllowance({}, allowance_ms)
        self._clock = clock
        self.token = ""
        self.interval_ms = 1000.0
        self._turned = clock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def allowance_ms(self) -> float:
        """How long (ms) the loop may stay blocked now."""
        return self.allowance.ms

    def turned(self, now: int) -> None:
        """The event loop ran at ``now`` (the host calls it with every Tick)."""
        self._turned = now

    def serve(self, token: str, interval_ms: float) -> None:
        """Beat for the session welcomed with ``token`` ("" : none) every ``interval_ms``."""
        self.interval_ms = interval_ms
        self.token = token

    def start(self) -> None:
        """Start the thread (once; a worker id too long for the suffix has none, logged)."""
        if len(self.identity) > _MAX_IDENTITY_BYTES:
            log.warning("stall_beats_off", reason="worker id too long for the heartbeat connection's identity")
            return
        self._turned = self._clock()
        self._thread = threading.Thread(target=self._run, daemon=True, name="ontoflow-stall-beats")
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread and wait for it (its socket is closed without lingering)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _run(self) -> None:
        sock: zmq.Socket | None = None
        last_beat = -math.inf
        told_stalled = told_hung = None  # the ``turned`` of the last stall told (each once)
        failures: dict[str, int] = {}
        try:
            while True:
                now = self._clock()
                turned, interval, token, allowance = self._turned, self.interval_ms, self.token, self.allowance.ms
                try:
                    if token and sock is None:  # connected once welcomed, before any stall
                        sock = self._open()
                    due = beat_due(now, turned, last_beat, interval, allowance)  # type: ignore[arg-type]
                    if sock is not None and due:
                        try:
                            sock.send_multipart([HEADER, encode(Heartbeat(session=token))], zmq.NOBLOCK)
                        except zmq.Again:
                            pass  # the queue is full (the daemon is away): the next one may pass
                        last_beat = now
                        if told_stalled != turned:
                            told_stalled = turned
                            log.warning("event_loop_stalled", worker_id=self._worker_id, stalled_ms=now - turned,
                                        heartbeats="from a thread")
                    elif token and now - turned > allowance and told_hung != turned:
                        told_hung = turned
                        log.error("event_loop_hung", worker_id=self._worker_id, stalled_ms=now - turned,
                                  allowance_ms=allowance)
                except Exception as exc:  # no socket now (EMFILE...): tried again at the next wake
                    if count := at_doubling(failures, "failed"):
                        log.error("stall_beats_failed", worker_id=self._worker_id, exc_type=type(exc).__name__,
                                  count=count)
                    if sock is not None:
                        sock.close(linger=0)
                        sock = None
                # Wake when the next one may be due: an interval after the loop's last turn, or
                # after this thread's last beat (a quarter of one at most, to see a new Welcome).
                wait_ms = max(turned + interval, last_beat + interval) - now
                if self._stop.wait(min(max(wait_ms, 1.0), max(interval / 4, 1.0)) / 1000):
                    return
        finally:
            if sock is not None:
                sock.close(linger=0)

    def _open(self) -> zmq.Socket:
        """This thread's DEALER, connected as the session's is (the same context: ``inproc://``)."""
        ctx = self._context if self._context is not None else shared_context()
        sock: zmq.Socket = zmq.Socket(ctx, zmq.DEALER)
        try:
            self._configure(sock)
        except BaseException:
            sock.close(linger=0)
            raise
        return sock

    def _configure(self, sock: zmq.Socket) -> None:
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.ROUTING_ID, self.identity)
        sock.setsockopt(zmq.SNDHWM, 4)  # a few Heartbeats, never a backlog of them
        if self._address.startswith("tcp://") and "[" in self._address:
            sock.setsockopt(zmq.IPV6, 1)
        if self._curve is not None:
            sock.setsockopt(zmq.CURVE_SERVERKEY, self._curve.server_public)
            sock.setsockopt(zmq.CURVE_PUBLICKEY, self._curve.keys.public)
            sock.setsockopt(zmq.CURVE_SECRETKEY, self._curve.keys.secret)
        sock.connect(self._address)
