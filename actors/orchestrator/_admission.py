"""Admitting a new document off the daemon's loop, each client's requests kept in order.

Compiling a submitted document and its contract check (``_documents``) are pure and bounded
by the document's size (at most 5,000 blocks; the checker's state budget), but a document of
5,000 blocks still takes about a second of CPU (``python -m bench.admit_document``); in the
loop, that second held every other client, every worker's outcome and every heartbeat, and a
client varying its documents defeats the cache kept by digest. So the first submit of a
document (the only one that does this work) has it done in a thread (``anyio.to_thread``):

- One document is checked at a time (a ``CapacityLimiter`` of 1): the thread and the loop share
  the GIL, which the interpreter hands over every 5 ms, so the loop keeps at least every other
  turn whatever N clients send; a second core would not run two checks any faster anyway.
- A client's requests are answered in the order it sent them: while its document is checked,
  its next requests wait behind it, then are answered as before (a client that pipelines its
  submits, as ``bench.daemon_cpu`` does, has hundreds waiting). At most :data:`MAX_QUEUED` of
  them, holding at most :data:`MAX_QUEUED_BYTES` of documents: past either, a request is
  answered ``too_many_waiting`` at once (what waits is held in memory). A submit is answered by the same code as before, once the work
  is kept: the idempotency key, the run limit and the journal's availability are read then,
  not before, so an idempotent re-send or a conflict reads as it did.
- At most :data:`MAX_CHECKING` clients wait for a check at once (each holds its document, up
  to the message limit, in memory); past it a submit of a new document is answered
  ``unavailable`` (retryable), a document already kept is admitted as before.

Without :meth:`DocumentChecks.run` started (an embedded cluster, the unit tests) documents are
checked in the loop, as before.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import anyio
import anyio.abc
import msgspec
import structlog

from ontoflow.actors.orchestrator._documents import Prepared
from ontoflow.protocols.client import Error
from ontoflow.runtime.actor import Outbox, where

__all__ = ["MAX_CHECKING", "MAX_QUEUED", "MAX_QUEUED_BYTES", "Deferred", "DocumentChecks"]

log = structlog.get_logger()

#: Clients whose document may be checked or wait for a check at once.
MAX_CHECKING = 16
#: Requests a client may send while its document is checked (answered after it, in order).
MAX_QUEUED = 10_000
#: The bytes of the documents those requests may carry together (the default message limit).
MAX_QUEUED_BYTES = 64 * 2**20


class Deferred(msgspec.Struct, frozen=True):
    """A submit's answer, later: its document's ``work`` (``SubmittedDocuments.admit(defer=True)``) first."""

    work: Callable[[], Prepared]


class DocumentChecks:
    """Runs documents' checks off the loop (see the module docstring).

    Args:
        answer: answers one client request in the loop (``ClientService``'s own answer: a
            submit whose work is kept no longer defers).
        keep: keeps what the work found (``SubmittedDocuments.keep``).
        send: sends a client a reply.
        outbox: the orchestrator's: a deferred answer is given as a batch is (its replies and
            runs leave with one commit).
    """

    def __init__(self, answer: Callable[[bytes, Any], None], keep: Callable[[Prepared], bool],
                 send: Callable[[bytes, Any], None], outbox: Outbox) -> None:
        self._answer = answer
        self._keep = keep
        self._send = send
        self._outbox = outbox
        self._tg: anyio.abc.TaskGroup | None = None
        self._limiter: anyio.CapacityLimiter | None = None
        self._waiting: dict[bytes, deque[Any]] = {}  # client -> its requests after the one checked
        self._bytes: dict[bytes, int] = {}  # client -> the bytes of the documents those carry
        self._inline = False

    @property
    def running(self) -> bool:
        """Whether a new document is checked off the loop (else in it)."""
        return self._tg is not None and not self._inline

    async def run(self, *, task_status: anyio.abc.TaskStatus = anyio.TASK_STATUS_IGNORED) -> None:
        """Host the checks until cancelled (a check in its thread is let finish: a second at most)."""
        async with anyio.create_task_group() as tg:
            self._tg, self._limiter = tg, anyio.CapacityLimiter(1)
            task_status.started()
            try:
                await anyio.sleep_forever()
            finally:
                self._tg = None

    def queue(self, identity: bytes, message: Any) -> bool:
        """Keep ``message`` behind the request of ``identity`` being checked; False when none is."""
        waiting = self._waiting.get(identity)
        if waiting is None:
            return False
        document = getattr(message, "manifest", None)
        size = self._bytes.get(identity, 0) + (len(document) if isinstance(document, msgspec.Raw) else 0)
        if len(waiting) >= MAX_QUEUED or size > MAX_QUEUED_BYTES:
            self._send(identity, Error(code="too_many_waiting", message=f"{len(waiting):,} requests ({size:,} bytes of "
                                       "documents) wait behind this client's document being checked; wait for its answer"))
        else:
            waiting.append(message)
            self._bytes[identity] = size
        return True

    def refusal(self) -> Error | None:
        """The answer to a submit of a new document when too many wait for a check, else None."""
        if len(self._waiting) < MAX_CHECKING:
            return None
        return Error(code="unavailable", message=f"documents: {MAX_CHECKING} clients' new documents are being checked; "
                                                 "retry later")

    def start(self, identity: bytes, message: Any, deferred: Deferred) -> None:
        """Check the document of ``message`` off the loop, then answer it and the requests that
        came behind it."""
        if self._tg is None:  # never: a Deferred is made only while ``running``
            raise RuntimeError("no document checks are running")
        self._waiting[identity] = deque()
        self._tg.start_soon(self._check, identity, message, deferred.work)

    async def _check(self, identity: bytes, message: Any, work: Callable[[], Prepared]) -> None:
        try:
            prepared = await anyio.to_thread.run_sync(work, limiter=self._limiter, abandon_on_cancel=True)
        except Exception as exc:  # a bug: the answer in the loop below does the work and says what
            log.error("document_check_failed", error=type(exc).__name__, where=where(exc))
        else:
            self._keep(prepared)
        with self._outbox.holding():
            self._answer_in_order(identity, message)
        self._outbox.flush()

    def _answer_in_order(self, identity: bytes, message: Any) -> None:
        waiting = self._waiting.pop(identity, deque())
        self._bytes.pop(identity, None)
        self._inline = True  # this one's work is kept (or the catalogue moved: once in the loop)
        try:
            self._answer(identity, message)
        finally:
            self._inline = False
        while waiting:
            if identity in self._waiting:  # one of them is checked in turn: the rest wait behind it
                self._waiting[identity].extend(waiting)
                return
            self._answer(identity, waiting.popleft())
