"""One session of a worker host with its orchestrator: a fresh DEALER, Ready, Welcome, serve.

A session ends when the orchestrator has been silent for ``liveness`` heartbeat intervals
(any message counts as a sign of life); the host then opens a new one after its backoff. The
host's step runners and held answers live on in ``WorkerHost``; a session only carries
messages (:class:`AnswerBook`, below, is why nothing is reported twice).

The session is the host's mailbox while it lasts (``recv_batch``, read by the host's step
runners one at a time through the actor kernel's ``pump``) and its outbox's sink (the host's
sends leave on this socket, per batch). Time is a fact here as everywhere on the kernel: the
host hands every :class:`~runtime.actor.Tick` to :meth:`Session.on_tick`, which decides the
heartbeat due and the silence that ends the session. The host's clock (:func:`monotonic_ms`)
and its Tick interval (:func:`tick_ms_for`, from the heartbeat interval) are set here too.

The answers a worker host may have to give again, across sessions, are held in its
:class:`~actors.worker._answer_book.AnswerBook` (one per host).

Every answer carries the session token of the last Welcome, so the daemon knows this host is
the one it registered (the token is never logged).
"""

from __future__ import annotations

import os
import re
import socket
import time
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import anyio
import structlog

from ontoflow.actors.capability import Capability, result_bytes_for
from ontoflow.actors.capability._defaults import RESULT_MARGIN_BYTES
from ontoflow.actors.errors import WorkerRefusedError
from ontoflow.actors.worker._answer_book import AnswerBook
from ontoflow.protocols.messages import Disconnect, Heartbeat
from ontoflow.runtime.transport import DealerMailbox, open_dealer

if TYPE_CHECKING:
    from ontoflow.actors.worker._host import WorkerHost

__all__ = ["MAX_REFUSAL_CHARS", "MAX_TICK_MS", "MIN_DAEMON_LIMIT", "AnswerBook", "Session", "absolute_ipc", "bound_answers", "default_worker_id",
           "monotonic_ms", "tick_ms_for"]

# AnswerBook is re-exported here, where it lived before ``_answer_book.py``.

log = structlog.get_logger()

#: The longest time between two Ticks (heartbeats and silences are decided on them).
MAX_TICK_MS = 50

#: The smallest message size limit a Welcome may announce (0: unknown): a Heartbeat and an
#: answer must fit, or the worker registers mute (every message withheld as too large).
MIN_DAEMON_LIMIT = RESULT_MARGIN_BYTES

#: The most of an orchestrator's refusal (``Disconnect.reason``) a worker shows (``Session.refused``).
MAX_REFUSAL_CHARS = 200


#: What of a host name goes into a default worker id: the worker id rule's characters, and few
#: enough of them that HOST-PID-RANDOM stays within ``MAX_WORKER_ID_CHARS`` (a host name may be
#: 253 characters, or anything ``sethostname`` accepted).
_HOST_PART = re.compile(r"[^A-Za-z0-9_.:@-]")
_HOST_PART_CHARS = 200


def default_worker_id() -> str:
    """``HOST-PID-RANDOM``: a worker id that follows the worker id rule for any host name."""
    host = _HOST_PART.sub("-", socket.gethostname())[:_HOST_PART_CHARS].lstrip("_.:@-") or "worker"
    return f"{host}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def absolute_ipc(address: str) -> str:
    """``address`` with a relative ``ipc://`` path made absolute against the working directory
    now. libzmq resolves the path at each (re)connect: after a step's ``os.chdir`` the worker's
    next session, its socket's own reconnect and its heartbeat thread's connection went to
    another file, and the worker never registered again. An abstract socket (``ipc://@``) and
    other transports are left as they are, and so is a path whose absolute form a Unix socket
    address cannot hold (``_MAX_IPC_PATH``: it connected relative, and still does)."""
    if not address.startswith("ipc://"):
        return address
    path = address[len("ipc://"):]
    if not path or path.startswith(("/", "@")):
        return address
    absolute = os.path.abspath(path)
    return address if len(os.fsencode(absolute)) > _MAX_IPC_PATH else "ipc://" + absolute


#: The longest path of a Unix socket address (``sun_path`` holds 108 bytes with its NUL on Linux).
_MAX_IPC_PATH = 107


def monotonic_ms() -> int:
    """The host's clock: liveness is about intervals, so it must not jump with the wall clock."""
    return time.monotonic_ns() // 1_000_000


def tick_ms_for(heartbeat_ms: int) -> int:
    """Four Ticks per heartbeat interval at least: a heartbeat leaves at most a quarter late."""
    return max(1, min(MAX_TICK_MS, heartbeat_ms // 4))


class Session:
    """A connection attempt and, once welcomed, a live registration. Run it once.

    Args:
        host: the worker host this session carries messages for.
        number: the host's count of sessions, this one included.
        patience: how many liveness windows to wait for the Welcome before giving up
            (``ReconnectBackoff.patience``); once welcomed, one window of silence ends it.

    Attributes:
        number: the host's count of sessions, this one included.
        welcomed: whether the orchestrator accepted this session.
        mailbox: the socket while the session is open, else None.
    """

    def __init__(self, host: WorkerHost, number: int, *, patience: int = 1) -> None:
        self._host = host
        self._patience = patience  # liveness windows to wait for the Welcome (then one)
        self.number = number
        self.welcomed = False
        self.mailbox: DealerMailbox | None = None
        self.last_heard_ms = 0
        self._next_beat_ms = 0
        self._over = anyio.Event()
        self._refused: str | None = None  # the reason of a Disconnect
        self._silent_since: int | None = None  # last_heard_ms when a tick last found silence

    async def run(self) -> bool:
        """Connect, register and serve until the orchestrator goes silent (or refuses, or the
        host says goodbye).

        Returns:
            Whether the orchestrator welcomed this session at some point.

        Raises:
            WorkerRefusedError: when the orchestrator sends ``Disconnect``.
            runtime.errors.TransportError: when the address cannot be connected to at all.
        """
        host = self._host
        async with open_dealer(
            host.address,
            identity=host.worker_id.encode(),
            context=host.context,
            curve=host.curve,
            max_message_bytes=host.max_message_bytes,
        ) as dealer:
            self.mailbox = DealerMailbox(dealer)
            dealer.send(host.ready_message())
            self.last_heard_ms = host.now()
            host.session_started(self)
            try:
                await self._over.wait()
            finally:
                host.session_ended(self)  # what is gathered leaves on this socket, then none
                self.mailbox = None
        if self._refused is not None:
            raise WorkerRefusedError(self._refused)
        return self.welcomed

    async def recv_batch(self) -> list[tuple[bytes, Any]]:
        """The next batch of the socket (the host's mailbox); any message is a sign of life.

        Raises:
            anyio.ClosedResourceError: when the session is over.
        """
        mailbox = self.mailbox
        if mailbox is None:
            raise anyio.ClosedResourceError
        batch = await mailbox.recv_batch()
        self.last_heard_ms = self._host.now()
        return batch

    def recv_batch_nowait(self) -> list[tuple[bytes, Any]]:
        """What is queued on the socket now, or ``[]`` (a spinning host polls it).

        Raises:
            anyio.ClosedResourceError: when the session is over.
        """
        mailbox = self.mailbox
        if mailbox is None:
            raise anyio.ClosedResourceError
        batch = mailbox.recv_batch_nowait()
        if batch:
            self.last_heard_ms = self._host.now()
        return batch

    def on_welcome(self, now: int, daemon_limit: int = 0, capabilities: Iterable[Capability] = ()) -> bool:
        """A Welcome arrived: heartbeat at once (the interval may have changed), and send the
        daemon nothing bigger than it accepts (``daemon_limit``, its
        ``Welcome.max_message_bytes``; 0: unknown): batches are cut under it on this session's
        socket, and the answers of ``capabilities`` are bounded by it (:func:`bound_answers`).
        A bigger message would make libzmq drop the whole connection, and every step in flight.

        Returns:
            Whether it is this session's first (the registration itself).
        """
        host = self._host
        daemon_limit = max(daemon_limit, 0)
        if self.mailbox is not None:
            self.mailbox.dealer.peer_max_message_bytes = daemon_limit
        bound_answers(capabilities, host.max_message_bytes, daemon_limit)
        host.send(b"", Heartbeat(session=host.session_token))
        self._next_beat_ms = now + host.heartbeat_s * 1000
        first = not self.welcomed
        self.welcomed = True
        return first

    def on_tick(self, now: int) -> None:
        """Heartbeat when one is due; end the session once the orchestrator has been silent
        for ``liveness`` intervals, at two ticks in a row with nothing heard between them."""
        if self._over.is_set():
            return
        host = self._host
        interval_ms = host.heartbeat_s * 1000
        silent_ms = now - self.last_heard_ms
        if silent_ms > interval_ms * host.liveness * (1 if self.welcomed else self._patience):
            # A second look, as the orchestrator's pool takes (``_pool_clocks``): after the loop
            # stalled (a step's import on a loaded machine), the first tick can run before the
            # socket's queued heartbeats are read, and the session ended with its steps lost.
            if self._silent_since != self.last_heard_ms:
                self._silent_since = self.last_heard_ms
                return
            log.warning("orchestrator_silent", worker_id=host.worker_id, session=self.number,
                        silent_ms=round(silent_ms), welcomed=self.welcomed)
            self._over.set()
            return
        if self.welcomed and now >= self._next_beat_ms:
            self._next_beat_ms = now + interval_ms
            host.send(b"", Heartbeat(session=host.session_token))

    @property
    def over(self) -> bool:
        """Whether the session has ended (silence, a refusal or a goodbye)."""
        return self._over.is_set()

    def refused(self, reason: str) -> None:
        """The orchestrator said ``Disconnect``: the session ends and ``run`` raises. Its reason
        is peer text, shown (logged, raised, printed by ``ontoflow worker``) as one line of at most
        ``MAX_REFUSAL_CHARS`` printable characters: a newline in it forged lines of the worker's
        output, and a 100 kB one was printed and logged whole."""
        reason = _one_line(reason)
        log.error("worker_refused", worker_id=self._host.worker_id, reason=reason)
        self._refused = reason
        self._over.set()

    def goodbye(self, reason: str, linger_ms: int) -> None:
        """Send what is gathered and ``Disconnect(reason)`` now, then end the session; what is
        still queued on the socket may leave for ``linger_ms`` after it closes."""
        mailbox = self.mailbox
        if mailbox is None:
            return
        host = self._host
        host.send(b"", Disconnect(reason=reason, session=host.session_token))
        host.outbox.flush()
        mailbox.dealer.linger_on_close(linger_ms)
        self._over.set()


def _one_line(text: str) -> str:
    """``text`` with each run of whitespace as one space and other unprintable characters as
    ``?``, cut to ``MAX_REFUSAL_CHARS`` (``…`` marks a cut)."""
    text = " ".join(text[: MAX_REFUSAL_CHARS * 4].split())
    text = "".join(c if c.isprintable() else "?" for c in text[: MAX_REFUSAL_CHARS + 1])
    return text if len(text) <= MAX_REFUSAL_CHARS else text[:MAX_REFUSAL_CHARS] + "…"


def bound_answers(capabilities: Iterable[Capability], own: int, daemon: int) -> None:
    """Bound each capability's answer (``max_result_bytes``) by the smaller of this host's
    message size limit ``own`` and its daemon's, ``daemon`` (0: unknown, ``own`` alone): an
    answer the daemon would refuse then ends its step ``failure`` as one over this host's own
    limit does, instead of costing the connection. A class's own bound stays when it is
    lower, as ``hosted`` left it (a bound set on an instance in code is not remembered: the
    class's or the limits' applies again)."""
    bound = result_bytes_for(min(own, daemon) if daemon > 0 else own)
    for cap in capabilities:
        declared = type(cap).max_result_bytes
        if declared == Capability.max_result_bytes:  # the default: this host's bound, as at start
            cap.max_result_bytes = bound
        else:  # a class's own bound only falls, never above what a message carries (as in ``hosted``)
            cap.max_result_bytes = min(declared, bound)
