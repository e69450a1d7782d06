"""The daemon's client API: answers ``protocols.client`` requests for one orchestrator.

Run state stays in the orchestrator; this module only translates requests into its calls
(submit, status, cancel, the registry) and results into replies. A request that fails gets an
``Error`` with a code and a message naming what is wrong, never a stack trace; an unexpected
failure is logged here with its location and answered ``internal``. While the journal cannot
be written (a full disk) a submit or a cancel is answered ``unavailable`` (retryable) and
reads are still answered. The read-only requests (List, Show, and Status of a run no longer
in memory) are answered from the journal by ``_queries``.

A submitted document (a workflow manifest, an execution plan or an OML pipeline) is compiled,
contract checked and admitted with its inputs by ``_documents`` (the catalogue it is compiled
against, and what is kept of each document); all three kinds are journaled and recovered
alike, the journal keeping the document as submitted.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import msgspec
import structlog

from ontoflow.actors.orchestrator._admission import Deferred, DocumentChecks
from ontoflow.actors.orchestrator._client_refusals import UNAVAILABLE, no_run, value_refusal
from ontoflow.actors.orchestrator._documents import Admitted, IdempotencyBook, SubmittedDocuments
from ontoflow.actors.orchestrator._mailbox import ADMIN, key_of
from ontoflow.actors.orchestrator._orchestrator import AnswerRefused, Orchestrator
from ontoflow.actors.orchestrator._owners import RunOwners
from ontoflow.actors.orchestrator._queries import Queries, ReadsSpent, Waiters, run_status, trace_dicts
from ontoflow.actors.orchestrator._results import RunResult
from ontoflow.actors.orchestrator._run_table import Run
from ontoflow.actors.pipelines import ConnectionResolutionError
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.client import (
    Answer, Ask, Busy, CancelRun, Catalog, CatalogInfo, Error, ListRuns, MAX_IDEMPOTENCY_KEY_CHARS,
    MAX_RUN_ID_CHARS, Refused, RunList, RunProgress, RunStatus, Show, Status, Submit, SubmitAccepted, SubmitRequest,
    WorkerRecord, Workers, WorkersInfo, Watch
)
from ontoflow.protocols.documents import idempotency_conflict
from ontoflow.protocols.errors import ManifestError
from ontoflow.runtime.errors import ConfigError
from ontoflow.runtime.actor import where
from ontoflow.runtime.journal import JournalCorruptError

__all__ = ["ClientService"]

log = structlog.get_logger()

class ClientService:
    """Serves the client API of ``orchestrator``. ``compose_orchestrator`` wires it in: its
    ``handle`` as the client handler, ``run_ended`` and ``progress`` as run observers.

    Args:
        orchestrator: the orchestrator whose runs and workers clients ask about.
        queries: answers the read-only requests.
        keep_finished: how many ended runs stay in memory before the oldest is forgotten
            (with a journal they stay queryable from it).
        max_runs: runs in flight past which a submit gets ``Busy``; ``None``: no bound.
        max_value_bytes: the largest encoded context value a submit may carry.
        waiters: the bounds on held ``Status(wait=True)`` and ``Watch`` requests (per client,
            clients, lease); default ``Waiters()``.
    """

    def __init__(
        self,
        orchestrator: Orchestrator,
        queries: Queries,
        *,
        keep_finished: int = 10_000,
        max_runs: int | None = None,
        max_value_bytes: int = 1 << 20,
        waiters: Waiters | None = None,
    ) -> None:
        self._orch = orchestrator
        self._documents = SubmittedDocuments(orchestrator.registry, orchestrator.connections)
        self._waiters = waiters if waiters is not None else Waiters()
        self._finished: deque[str] = deque()
        self._keep = keep_finished
        self.max_runs = max_runs
        self.max_value_bytes = max_value_bytes
        #: False once the daemon drains: submits are refused with ``shutting_down``.
        self.accepting = True
        self._queries = queries
        self._idempotency = IdempotencyBook(orchestrator.journal)
        self._owners = RunOwners(orchestrator)  # who submitted each run, roles enforced
        #: Answers an ``Ask`` (``handler(identity, ask)``, replying itself, later); set by
        #: ``compose_orchestrator`` when the daemon has domains, else an Ask gets ``no_domains``.
        self.ask_handler: Callable[[bytes, Ask], None] | None = None
        #: Checks new documents off the loop once its ``run`` is started (the daemon does).
        self.checks = DocumentChecks(self._handle, self._documents.keep, orchestrator.send_client, orchestrator.outbox)
        self._behind = self.checks.waiting  # clients whose requests wait behind a document being checked

    def handle(self, identity: bytes, message: Any) -> None:
        """Answer one client message (called by the orchestrator's receive loop); in order
        behind the client's request whose document is being checked, if any (``_admission``)."""
        if identity in self._behind:
            self.checks.queue(identity, message)
        else:
            self._handle(identity, message)

    def _handle(self, identity: bytes, message: Any) -> None:
        try:  # a daemon's Submit (per run) without ``_answer``'s call: it checks no run id of a Submit
            reply = self._submit_answer(identity, message) if type(message) is SubmitRequest else \
                self._answer(identity, message)
        except ReadsSpent as exc:  # this turn's journal reads are spent: asked again, answered
            reply = exc.refusal
        except JournalCorruptError as exc:  # a damaged row, not a bug: the log says which
            log.error("client_request_failed", op=type(message).__name__, error=type(exc).__name__, detail=str(exc))
            reply = Error(code="journal_damaged", message=f"the journal's record of run {getattr(message, 'run_id', '?')} "
                                                          "is damaged or unreadable here (the daemon's log says why)")
        except Exception as exc:  # a bug here must not reach the client as a trace
            log.error("client_request_failed", op=type(message).__name__, error=type(exc).__name__, where=where(exc))
            reply = Error(code="internal", message="the daemon failed to answer (see its log)")
        if type(reply) is Deferred:
            self.checks.start(identity, message, reply)
        elif reply is not None:
            self._orch.send_client(identity, reply)

    def _answer(self, identity: bytes, message: Any) -> Any:
        orch = self._orch
        run_id = getattr(message, "run_id", None)
        if run_id is None and type(message) is Answer and message.token and orch.authority.roles is not None:
            # A token names its run (and is no secret: a hash of the run id, step and attempt):
            # answered by token alone, another key's run was resumed past the check below.
            asker = orch.runs.asked(message.token)
            if asker is not None and not orch.authority.may_touch(identity, self._owners.of(asker), message):
                return Error(code="forbidden", message="that question is asked by a run another key submitted")
        if run_id is not None and not isinstance(message, Submit):
            if len(run_id) > MAX_RUN_ID_CHARS:  # no run has such an id: not looked up, not echoed whole
                return no_run(run_id)
            if orch.authority.roles is not None and not orch.authority.may_touch(identity, self._owners.of(run_id), message):
                return Error(code="forbidden", message=f"run {run_id} was submitted by another key")
        if type(message) is SubmitRequest:  # a daemon's Submit: by exact type, before the class patterns
            return self._submit_answer(identity, message)
        match message:
            case SubmitRequest() | Submit():
                return self._submit_answer(identity, message)
            case Status(run_id=run_id, wait=wait):
                return self._status(identity, run_id, wait)
            case Answer() if not orch.available:  # resuming journals a fact: not while it cannot
                return UNAVAILABLE
            case Answer(choice=choice, run_id=run_id, token=token):
                if run_id is None and token is None:
                    return Error(code="invalid_request", message="an Answer names a run_id or a token")
                refused = value_refusal({"choice": choice}, self.max_value_bytes, "answer", "invalid_answer", "invalid_answer")
                if refused is not None:  # before it is journaled, put in the context and dispatched
                    return refused
                try:
                    run_id = orch.resume(choice, run_id=run_id, token=token)
                except AnswerRefused as exc:
                    return Error(code=exc.code, message=str(exc))
                log.info("run_answered", run_id=run_id)
                found = self._queries.lookup(run_id)
                if found is not None and found.result is not None:
                    return run_status(found.result)
                return self._live_status(run_id, found.state if found is not None else None, self._questions(run_id))
            case Watch(run_id=run_id):
                found = self._queries.lookup(run_id)
                if found is None:
                    return no_run(run_id)
                if found.result is not None:
                    return run_status(found.result)
                held = self._waiters.hold(identity, run_id, "watch", orch.now())
                if held is not True and held is not False:
                    return Error(code="too_many_waiting", message=held)
                return RunProgress(run_id=run_id, steps=trace_dicts(found.state.trace), running=orch.runs.running(run_id))
            case ListRuns(status=status, limit=limit):
                listed = self._queries.list_runs(status, limit)
                roles = orch.authority.roles_of(identity)
                if roles is not None and ADMIN not in roles and type(listed) is RunList:  # its own runs only
                    key = key_of(identity)
                    listed = RunList(runs=[r for r in listed.runs if self._owners.of(r.run_id) == key])
                return listed
            case Show(run_id=run_id):
                shown = self._queries.show(run_id)
                return shown if shown is not None else no_run(run_id)
            case Ask():
                if self.ask_handler is None:
                    return Error(code="no_domains", message="this daemon serves no domains (start it with --domains DIR)")
                self.ask_handler(identity, message)
                return None
            case Workers():
                return WorkersInfo(workers=self.workers())
            case Catalog():
                return CatalogInfo(capabilities=[meta for _, meta in sorted(self.catalog().items())])
            case CancelRun() if not orch.available:
                return UNAVAILABLE
            case CancelRun(run_id=run_id, reason=reason):
                found = self._queries.lookup(run_id)  # the read budget is charged here, before anything is applied
                if found is None:
                    return no_run(run_id)
                if found.result is not None:
                    return run_status(found.result)
                run = orch.runs.get(run_id)  # answered from it: read back, a forgotten run's was refused once applied
                orch.cancel(run_id, reason)
                log.info("run_cancel_requested", run_id=run_id)
                return run_status(run.result) if run is not None and run.result is not None else \
                    RunStatus(run_id=run_id, status="cancelling")
            case _ if type(message) is Refused:  # a request of a batch that did not decode, in its place
                return message
            case _:
                return Error(code="invalid_request", message=f"{type(message).__name__} is not a request")

    def _status(self, identity: bytes, run_id: str, wait: bool) -> Any:
        """The answer to ``Status``: the run's status now, or None when held until its end."""
        found = self._queries.lookup(run_id)
        if found is None:
            return no_run(run_id)
        if found.result is not None:
            return run_status(found.result)
        questions = self._questions(run_id)
        if wait and not questions:
            held = self._waiters.hold(identity, run_id, "status", self._orch.now())
            if held is True:
                return None
            if held is not False:
                return Error(code="too_many_waiting", message=held)
        return self._live_status(run_id, found.state, questions)

    def _submit_answer(self, identity: bytes, message: Submit) -> Any:
        """Start the run ``message`` submits; the reply now, or None while it is held (``wait``)."""
        orch = self._orch
        if not message.wait:
            return self._owned(identity, self._submit(message, identity))
        reply = self._submit(message, identity)
        if type(reply) is not SubmitAccepted:
            return reply
        if orch.authority.roles is not None:
            self._owned(identity, reply)
        orch.send_client(identity, reply)
        run = orch.runs.by_id.get(reply.run_id)  # ``get`` in line: per run
        if run is not None and run.result is None and orch.outbox.available and not run.engine.suspensions(run.state):
            # ``_status`` of the run just started, in memory (the usual submit-and-wait): hold the
            # request, as it would (the submitter owns its run), since a new run's start (one clock read)
            held = self._waiters.hold(identity, reply.run_id, "status", orch.now() if reply.existing else run.state.started_ms)
            if held is True:
                return None
        return self._status(identity, reply.run_id, True)  # the submitter owns its run

    def _owned(self, identity: bytes, reply: Any) -> Any:
        """Note who submitted the run ``reply`` accepts (roles enforced only)."""
        if isinstance(reply, SubmitAccepted) and self._orch.authority.roles is not None:
            self._owners.note(reply.run_id, key_of(identity))
        return reply

    def note_owner(self, run_id: str, key: str) -> None:
        """Note ``key`` as the owner of ``run_id`` started other than by a Submit (an ask's run)."""
        self._owners.note(run_id, key)

    def _submit(self, message: Submit, identity: bytes) -> Any:
        orch = self._orch
        if not orch.outbox.available:  # first: even a known idempotency key may name an uncommitted run
            return UNAVAILABLE
        key = message.idempotency_key
        fingerprint = None
        if key is not None and not 0 < len(key) <= MAX_IDEMPOTENCY_KEY_CHARS:
            return Error(code="invalid_request", message=f"idempotency_key must be 1 to {MAX_IDEMPOTENCY_KEY_CHARS} "
                                                         f"characters (got {len(key)})")
        if key is not None:
            try:
                fingerprint = self._idempotency.fingerprint(message.manifest, message.inputs, message.manifest_hash,
                                                            message.deadline_ms)
            except ManifestError as exc:
                return Error(code="invalid_manifest", message=str(exc))
            existing = orch.find_run(idempotency_key=(key := orch.authority.scoped(identity, key)))  # a key's own
            if existing is not None and key != message.idempotency_key and self._owners.foreign(existing, identity):
                # Another key sent this key's prefixed form as its own, before keys were scoped: not its run.
                log.warning("run_resubmit_conflict", run_id=existing, reason="another key's run under the scoped key")
                return Error(code="idempotency_conflict", message="this idempotency key is taken by another client's "
                             "run (journaled before keys were scoped): send another")
            if existing is None and key != message.idempotency_key:  # journaled before keys were scoped?
                existing = self._owners.unscoped_run(identity, message.idempotency_key)
                key = key if existing is None else message.idempotency_key
            if existing is not None:
                conflict = idempotency_conflict(message.idempotency_key, self._idempotency.recorded(key, existing),
                                                fingerprint)
                if conflict is not None:
                    log.info("run_resubmit_conflict", run_id=existing)
                    return Error(code="idempotency_conflict", message=conflict)
                log.info("run_resubmitted", run_id=existing)
                return SubmitAccepted(run_id=existing, existing=True)
        if not self.accepting:
            return Error(code="shutting_down", message="the daemon is shutting down; submit to its successor")
        if self.max_runs is not None and orch.runs_in_flight >= self.max_runs:
            log.info("run_refused_busy", runs_in_flight=orch.runs_in_flight, limit=self.max_runs)
            return Busy(runs_in_flight=orch.runs_in_flight, limit=self.max_runs)
        refused = value_refusal(message.inputs, self.max_value_bytes, "input", "payload_too_large", "invalid_inputs")
        if refused is not None:
            return refused
        try:
            admitted = self._documents.admit(message.manifest, message.inputs, message.manifest_hash, message.worktree,
                                             defer=self.checks.defer)
            if type(admitted) is not Admitted:  # a new document: compiled and checked off the loop first
                return self.checks.refusal() or Deferred(admitted)
            if admitted.refusal is not None:
                return Error(code="invalid_manifest",
                             message=f"the document does not pass the contract check:\n{admitted.refusal}")
        except ManifestError as exc:
            return Error(code="invalid_manifest", message=str(exc))
        except ConfigError as exc:
            return Error(code="invalid_inputs", message=str(exc))
        except ConnectionResolutionError as exc:
            return Error(code="invalid_connections", message=str(exc))
        try:
            run_id = orch.commands.submit(admitted.workflow, message.inputs, run_id=message.run_id, deadline_ms=message.deadline_ms,
                                 source=admitted.source, idempotency_key=key,
                                 owner=key_of(identity) if orch.authority.roles is not None else None)
        except ValueError as exc:
            return Error(code="invalid_request", message=str(exc))
        if key is not None and fingerprint is not None:
            self._idempotency.record(key, fingerprint)
        return SubmitAccepted(run_id=run_id)

    def catalog(self) -> dict[str, CapabilityMetadata]:
        """Every capability a submitted document is compiled against: those live workers offer
        and those offered since the daemon started."""
        return self._documents.catalog()

    def compile(self, document: dict[str, Any] | msgspec.Raw, manifest_hash: str = "",
                worktree: str = "") -> tuple[Any, tuple[str, bytes]]:
        """Compile ``document`` against the capabilities known so far; returns the compiled
        workflow or plan and its pinned source ``(hash, bytes)`` (``SubmittedDocuments.compile``).

        Raises:
            ManifestError: naming each problem's path.
            actors.pipelines.ConnectionResolutionError: naming a pipeline's connection defined nowhere.
        """
        return self._documents.compile(document, manifest_hash, worktree)

    def workers(self) -> list[WorkerRecord]:
        """The live workers as clients see them."""
        now = self._orch.now()
        return [WorkerRecord(worker_id=w.worker_id, host=w.host, pid=w.pid, capabilities=sorted(w.capabilities),
                             slots=w.slots, in_flight=len(w.in_flight), last_seen_ms_ago=max(now - w.last_seen_ms, 0),
                             domains=w.domains) for w in self._orch.registry]

    def _questions(self, run_id: str) -> list[Any]:
        runs = self._orch.runs
        run = runs.get(run_id)  # None: a run read from the journal, not live here
        return [] if run is None else runs.questions(run)

    def _live_status(self, run_id: str, state: Any, questions: list[Any]) -> RunStatus:
        status = "running" if state is None else state.status
        return RunStatus(run_id=run_id, status=status, started_ms=0 if state is None else state.started_ms or 0,
                         questions=questions, running=self._orch.runs.running(run_id))  # the current state, seed 000

    def run_suspended(self, run: Run) -> None:
        """Answer the clients waiting for a run that now asks a question (status ``suspended``
        and the questions): they would otherwise wait for an answer only a person can give."""
        run_id = run.run_id
        waiting = self._waiters.ended(run_id)
        if waiting:
            reply = self._live_status(run_id, run.state, self._questions(run_id))
            for identity in waiting:
                self._orch.send_client(identity, reply)

    def tick(self, now: int) -> None:
        """Answer the held requests past their lease with the run's current status (their
        client re-asks if it is still there; one that went away is forgotten)."""
        for identity, run_id, _ in self._waiters.expire(now):
            found = self._queries.lookup(run_id, charged=False)
            if found is None:
                reply: Any = no_run(run_id)
            elif found.result is not None:
                reply = run_status(found.result)
            else:
                reply = self._live_status(run_id, found.state, self._questions(run_id))
            self._orch.send_client(identity, reply)

    def statistics(self) -> dict[str, int]:
        """Clients holding requests and requests held (see ``_queries.Waiters``)."""
        return self._waiters.statistics()

    def progress(self, run_id: str, entries: list[Any]) -> None:
        """Send the steps that just ended to the run's watchers (composed in the run table only
        while a Watch is held: ``Waiters.on_watching``)."""
        watchers = self._waiters.held(run_id, "watch")
        if watchers:
            progress = RunProgress(run_id=run_id, steps=trace_dicts(entries), running=self._orch.runs.running(run_id))
            for identity in watchers:
                self._orch.send_client(identity, progress)

    def run_ended(self, result: RunResult) -> None:
        """Answer the clients waiting for the run; forget the oldest ended runs past the bound."""
        waiting = self._waiters.ended(result.run_id)
        if waiting:
            status = run_status(result)
            for identity in waiting:
                self._orch.send_client(identity, status)
        self._finished.append(result.run_id)
        while len(self._finished) > self._keep:
            forgotten = self._finished.popleft()
            self._owners.forget(forgotten)
            self._orch.forget(forgotten)
