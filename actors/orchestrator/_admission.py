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
  them, holding at most :data:`MAX_QUEUED_BYTES` (as encoded): past either, a request is
  refused ``too_many_waiting`` in its turn (what waits is held in memory; a reply out of turn
  would be read as another request's). A submit is answered by the same code as before, once the work
  is kept: the idempotency key, the run limit and the journal's availability are read then,
  not before, so an idempotent re-send or a conflict reads as it did.
- At most :data:`MAX_CHECKING` clients wait for a check at once (each holds its document, up
  to the message limit, in memory); past it a submit of a new document is answered
  ``unavailable`` (retryable), a document already kept is admitted as before.
- When the daemon stops (after its drain), a check still running is abandoned: its request
  and every one waiting behind it are answered ``unavailable`` (:meth:`DocumentChecks.refuse_waiting`),
  each in its turn. Before, they were dropped with the check, and their clients waited to their
  own timeout for a daemon that had gone.

Without :meth:`DocumentChecks.run` started (an embedded cluster, the unit tests) documents are
checked in the loop, as before. The work itself is pure, so a thread may do it:
:func:`compiled_document` compiles against a copy of the catalogue and returns its error rather
than raising it, the contract check is ``_documents.ContractGate.verdict``, and what they find
travels back to the loop as a :class:`Prepared`, kept there by ``SubmittedDocuments.keep``.
On the path of a run (a document already kept) nothing here is called: ``ClientService``
reads ``DocumentChecks.defer`` and ``waiting`` itself.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.abc
import msgspec
import structlog

from ontoflow.actors.checker._report import capped_problems  # not the package: it imports this one
from ontoflow.actors.orchestrator._source import compile_document, encode_source
from ontoflow.actors.pipelines import ConnectionResolutionError
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.client import Error
from ontoflow.protocols.documents import decode_submitted_document, document_kind, refuse_duplicate_keys
from ontoflow.protocols.errors import ManifestError, Problem
from ontoflow.runtime.actor import Outbox, where

__all__ = ["MAX_CHECKING", "MAX_NAME_CHARS", "MAX_QUEUED", "MAX_QUEUED_BYTES", "Deferred", "DocumentChecks", "Prepared",
           "capped", "compiled_document"]

log = structlog.get_logger()

_ENCODER = msgspec.msgpack.Encoder()

#: Clients whose document may be checked or wait for a check at once.
MAX_CHECKING = 16
#: Requests a client may send while its document is checked (answered after it, in order).
MAX_QUEUED = 10_000
#: The bytes those requests may take together, as encoded (the default message limit).
MAX_QUEUED_BYTES = 64 * 2**20
#: The longest name a submitted document may give its workflow or plan.
MAX_NAME_CHARS = 256

#: The answer to a request left waiting on a check when the daemon stops.
_STOPPED = Error(code="unavailable", message="the daemon stopped before this client's new document was checked; "
                 "submit again (to its successor)")

#: A request that came past the bounds, refused in its turn.
_TOO_MANY = Error(code="too_many_waiting", message=f"over {MAX_QUEUED:,} requests or {MAX_QUEUED_BYTES:,} bytes wait "
                  "behind this client's document being checked; wait for its answer")


class Prepared(msgspec.Struct, frozen=True):
    """What the work :meth:`SubmittedDocuments.admit` deferred found, for :meth:`SubmittedDocuments.keep`.

    Attributes:
        version: the catalogue's generation the work was done against (it moves only when
            the metadata changed, not when a worker comes or goes).
        compiled_key: what the compile is kept by; ``compiled``: its result or its error.
        verdict_key: what the contract verdict is kept by; ``verdict``: the verdict and its
            refusal's log fields, or None when it was known already (or the compile failed).
        document: the submitted document, when the work digested it itself (a large one: its
            digest, ``compiled_key[0]``, is not made again in the loop); else None.
    """

    version: int
    compiled_key: tuple[bytes, str, str]
    compiled: Any
    verdict_key: tuple[bytes, tuple[str, ...]]
    verdict: tuple[str | None, dict[str, Any] | None] | None
    document: Any = None


def capped(exc: ManifestError) -> ManifestError:
    """``exc`` with at most :data:`~actors.checker.SHOWN` problems shown and the rest counted."""
    problems = capped_problems(exc.problems)
    return exc if problems is exc.problems else ManifestError(problems, source=exc.source)


def compiled_document(body: bytes, document: Any, catalog: Mapping[str, CapabilityMetadata], connections: Mapping[str, Any],
              manifest_hash: str, worktree: str) -> tuple[Any, tuple[str, bytes]] | Exception:
    """The document compiled and pinned, or the error that refuses it (a ``ManifestError``
    capped, or a ``ConnectionResolutionError``: the daemon's connections do not change while it
    runs, so neither does the answer). Pure: safe off the loop."""
    try:
        if isinstance(document, msgspec.Raw):  # decoded only the first time these bytes arrive
            document = decode_submitted_document(body)  # total: bad UTF-8 is invalid_manifest
            refuse_duplicate_keys(body, document)  # as the YAML and JSON readers do
        kind = document_kind(document)
        workflow = compile_document(document, catalog, kind=kind, manifest_hash=manifest_hash, worktree=worktree,
                                    connections=connections, source=f"submitted {kind}")
    except ManifestError as exc:
        return capped(exc)
    except ConnectionResolutionError as exc:
        return exc
    name = workflow.name or ""
    if len(name) > MAX_NAME_CHARS:  # a name is logged with each run (``run_submitted``), and listed
        return ManifestError(Problem(path="name", message=f"is {len(name):,} characters; the most is {MAX_NAME_CHARS}"),
                             source=f"submitted {kind}")
    return workflow, encode_source(document, workflow, kind=kind)


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
        #: Client -> its requests after the one being checked (read by ``ClientService.handle``
        #: on every request: a dict lookup in its own file, not a call into this one).
        self.waiting: dict[bytes, deque[Any]] = {}
        self._bytes: dict[bytes, int] = {}  # client -> the bytes of the documents those carry
        #: Whether a new document is checked off the loop (else in it): while ``run`` runs,
        #: but not for the request answered once its check is done.
        self.defer = False

    async def run(self, *, task_status: anyio.abc.TaskStatus = anyio.TASK_STATUS_IGNORED) -> None:
        """Host the checks until cancelled (a check in its thread is let finish: a second at most)."""
        async with anyio.create_task_group() as tg:
            self._tg, self._limiter, self.defer = tg, anyio.CapacityLimiter(1), True
            task_status.started()
            try:
                await anyio.sleep_forever()
            finally:
                self._tg, self.defer = None, False

    def queue(self, identity: bytes, message: Any) -> None:
        """Keep ``message`` behind the request of ``identity`` being checked (in ``waiting``);
        past the bounds, keep its refusal instead, answered in its turn."""
        waiting = self.waiting[identity]
        # Measured as encoded (a submit's inputs too, not its document alone): only requests
        # that wait pay it.
        size = self._bytes.get(identity, 0) + len(_ENCODER.encode(message))
        if len(waiting) >= MAX_QUEUED or size > MAX_QUEUED_BYTES:
            waiting.append(_TOO_MANY)  # one shared reply: a flood past the bounds costs a slot each
        else:
            waiting.append(message)
            self._bytes[identity] = size

    def refusal(self) -> Error | None:
        """The answer to a submit of a new document when too many wait for a check, else None."""
        if len(self.waiting) < MAX_CHECKING:
            return None
        return Error(code="unavailable", message=f"documents: {MAX_CHECKING} clients' new documents are being checked; "
                                                 "retry later")

    def refuse_waiting(self) -> int:
        """Answer every request waiting on a check ``unavailable``, in its turn (the one being
        checked first), and stop deferring: the daemon stops, and its checks with it. A check
        that ends after this answers nothing more.

        Returns:
            How many requests were refused.
        """
        self.defer = False
        refused = 0
        with self._outbox.holding():
            for identity in list(self.waiting):
                behind = self.waiting.pop(identity)
                self._bytes.pop(identity, None)
                for _ in range(1 + len(behind)):  # the request being checked, then those behind it
                    self._send(identity, _STOPPED)
                    refused += 1
        self._outbox.flush()
        if refused:
            log.info("document_checks_abandoned", requests=refused)
        return refused

    def start(self, identity: bytes, message: Any, deferred: Deferred) -> None:
        """Check the document of ``message`` off the loop, then answer it and the requests that
        came behind it."""
        if self._tg is None:  # never: a Deferred is made only while ``defer``
            raise RuntimeError("no document checks are running")
        self.waiting[identity] = deque()
        log.debug("document_check_deferred", waiting_checks=len(self.waiting))
        self._tg.start_soon(self._check, identity, message, deferred.work)

    async def _check(self, identity: bytes, message: Any, work: Callable[[], Prepared]) -> None:
        try:
            prepared = await anyio.to_thread.run_sync(work, limiter=self._limiter, abandon_on_cancel=True)
            self._keep(prepared)
        except Exception as exc:  # a bug: the answer in the loop below does the work and says what
            log.error("document_check_failed", error=type(exc).__name__, where=where(exc))
        if identity not in self.waiting:  # refused while it was checked (the daemon stops)
            return
        try:
            with self._outbox.holding():
                self._answer_in_order(identity, message)
            self._outbox.flush()
        except Exception as exc:  # a bug: it must not end the task group, and the daemon with it
            self.waiting.pop(identity, None)
            self._bytes.pop(identity, None)
            log.error("document_answer_failed", error=type(exc).__name__, where=where(exc))

    def _answer_in_order(self, identity: bytes, message: Any) -> None:
        waiting = self.waiting.pop(identity, deque())
        self._bytes.pop(identity, None)
        self.defer = False  # this one's work is kept (or the catalogue moved: once in the loop)
        try:
            self._answer(identity, message)
        finally:
            self.defer = self._tg is not None
        while waiting:
            if identity in self.waiting:  # one of them is checked in turn: the rest wait behind it
                self.waiting[identity].extend(waiting)
                self._bytes[identity] = sum(len(_ENCODER.encode(m)) for m in waiting if m is not _TOO_MANY)
                return
            message = waiting.popleft()
            if message is _TOO_MANY:
                self._send(identity, _TOO_MANY)
            else:
                self._answer(identity, message)
