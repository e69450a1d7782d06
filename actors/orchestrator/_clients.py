"""The daemon's client API: answers ``protocols.client`` requests for one orchestrator.

Run state stays in the orchestrator; this module only translates requests into its calls
(submit, status, cancel, the registry) and results into replies. A request that fails gets an
``Error`` with a code and a message naming what is wrong, never a stack trace; an unexpected
failure is logged here with its location and answered ``internal``. The read-only requests
(List, Show, and Status of a run no longer in memory) are answered from the journal by
``_queries``.

A submitted document may be a workflow manifest, an execution plan or an OML pipeline (told
apart by content, ``_source.document_kind``); all three are journaled and recovered alike.
A pipeline's ``@name`` connections are resolved here from the orchestrator's ``connections``
(the daemon's ``--connections`` file) or ``ONTOFLOW_CONNECTION_<NAME>``; the journal keeps the
document as submitted. Documents are compiled against the metadata of every capability a live worker offers or has
offered since the daemon started, so a run can be submitted while its workers reconnect; its
steps then wait for a worker, up to their schedule-to-start timeout.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import msgspec
import structlog

from ontoflow.actors.orchestrator._limits import check_payload
from ontoflow.actors.orchestrator._orchestrator import Orchestrator
from ontoflow.actors.orchestrator._queries import Queries, run_status, trace_dicts
from ontoflow.actors.orchestrator._results import RunResult
from ontoflow.actors.orchestrator._source import compile_document, document_kind, encode_source
from ontoflow.actors.planner import ConnectionResolutionError
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.client import (
    Ask,
    Busy,
    CancelRun,
    Error,
    ListRuns,
    RunProgress,
    RunStatus,
    Show,
    Status,
    Submit,
    SubmitAccepted,
    WorkerRecord,
    Workers,
    WorkersInfo,
    Watch,
)
from ontoflow.protocols.errors import ManifestError, Problem
from ontoflow.runtime.errors import ConfigError
from ontoflow.runtime.actor import where
from ontoflow.runtime.inputs import check_inputs

__all__ = ["ClientService"]

log = structlog.get_logger()

_encode = msgspec.msgpack.Encoder(order="deterministic").encode
_document_decoder = msgspec.msgpack.Decoder(dict[str, Any])


def _decode_document(body: bytes) -> dict[str, Any]:
    """The submitted document of a ``SubmitRequest``.

    Raises:
        ManifestError: when it is not a map with string keys (its content is not echoed).
    """
    try:
        return _document_decoder.decode(body)
    except msgspec.DecodeError:
        raise ManifestError(Problem(path="manifest", message="expected an object with string keys"),
                            source="submitted document") from None


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
    """

    def __init__(
        self,
        orchestrator: Orchestrator,
        queries: Queries,
        *,
        keep_finished: int = 10_000,
        max_runs: int | None = None,
        max_value_bytes: int = 1 << 20,
    ) -> None:
        self._orch = orchestrator
        self._known: dict[str, CapabilityMetadata] = {}
        self._catalog_version = -1
        self._waiting: dict[str, list[bytes]] = {}
        self._watchers: dict[str, list[bytes]] = {}
        self._finished: deque[str] = deque()
        self._keep = keep_finished
        self.max_runs = max_runs
        self.max_value_bytes = max_value_bytes
        #: False once the daemon drains: submits are refused with ``shutting_down``.
        self.accepting = True
        self._queries = queries
        # Compiled workflows by manifest bytes: a client submitting the same manifest again
        # (the common case) costs a lookup, not a decode, a validation and a compilation.
        self._compiled: dict[tuple[bytes, str], tuple[Any, tuple[str, bytes]]] = {}
        #: Answers an ``Ask`` (``handler(identity, ask)``, replying itself, later); set by
        #: ``compose_orchestrator`` when the daemon has domains, else an Ask gets ``no_domains``.
        self.ask_handler: Callable[[bytes, Ask], None] | None = None

    def handle(self, identity: bytes, message: Any) -> None:
        """Answer one client message (called by the orchestrator's receive loop)."""
        try:
            reply = self._answer(identity, message)
        except Exception as exc:  # a bug here must not reach the client as a trace
            log.error("client_request_failed", op=type(message).__name__, error=type(exc).__name__, where=where(exc))
            reply = Error(code="internal", message="the daemon failed to answer (see its log)")
        if reply is not None:
            self._orch.send_client(identity, reply)

    def _answer(self, identity: bytes, message: Any) -> Any:
        orch = self._orch
        match message:
            case Submit(wait=False):  # a SubmitRequest is a Submit
                return self._submit(message)
            case Submit():
                reply = self._submit(message)
                if not isinstance(reply, SubmitAccepted):
                    return reply
                self._orch.send_client(identity, reply)
                return self._answer(identity, Status(run_id=reply.run_id, wait=True))
            case Status(run_id=run_id, wait=wait):
                found = self._queries.lookup(run_id)
                if found is None:
                    return Error(code="unknown_run", message=f"no run {run_id} here")
                if found.result is not None:
                    return run_status(found.result)
                if wait:
                    self._waiting.setdefault(run_id, []).append(identity)
                    return None
                return RunStatus(run_id=run_id, status="running", started_ms=found.state.started_ms or 0)
            case Watch(run_id=run_id):
                found = self._queries.lookup(run_id)
                if found is None:
                    return Error(code="unknown_run", message=f"no run {run_id} here")
                if found.result is not None:
                    return run_status(found.result)
                self._watchers.setdefault(run_id, []).append(identity)
                return RunProgress(run_id=run_id, steps=trace_dicts(found.state.trace))
            case ListRuns(status=status, limit=limit):
                return self._queries.list_runs(status, limit)
            case Show(run_id=run_id):
                shown = self._queries.show(run_id)
                return shown if shown is not None else Error(code="unknown_run", message=f"no run {run_id} here")
            case Ask():
                if self.ask_handler is None:
                    return Error(code="no_domains", message="this daemon serves no domains (start it with --domains DIR)")
                self.ask_handler(identity, message)
                return None
            case Workers():
                return WorkersInfo(workers=self.workers())
            case CancelRun(run_id=run_id, reason=reason):
                found = self._queries.lookup(run_id)
                if found is None:
                    return Error(code="unknown_run", message=f"no run {run_id} here")
                if found.result is None:
                    orch.cancel(run_id, reason)
                    log.info("run_cancel_requested", run_id=run_id)
                    found = self._queries.lookup(run_id)
                if found is not None and found.result is not None:
                    return run_status(found.result)
                return RunStatus(run_id=run_id, status="cancelling")
            case _:
                return Error(code="invalid_request", message=f"{type(message).__name__} is not a request")

    def _submit(self, message: Submit) -> Any:
        orch = self._orch
        if message.idempotency_key is not None:
            existing = orch.find_run(idempotency_key=message.idempotency_key)
            if existing is not None:
                log.info("run_resubmitted", run_id=existing)
                return SubmitAccepted(run_id=existing, existing=True)
        if not self.accepting:
            return Error(code="shutting_down", message="the daemon is shutting down; submit to its successor")
        if self.max_runs is not None and orch.runs_in_flight >= self.max_runs:
            log.info("run_refused_busy", runs_in_flight=orch.runs_in_flight, limit=self.max_runs)
            return Busy(runs_in_flight=orch.runs_in_flight, limit=self.max_runs)
        too_big = check_payload(message.inputs, self.max_value_bytes, "input")
        if too_big is not None:
            return Error(code="payload_too_large", message=too_big)
        try:
            workflow, source = self.compile(message.manifest, message.manifest_hash)
            if message.inputs:
                check_inputs(message.inputs, self._known)
        except ManifestError as exc:
            return Error(code="invalid_manifest", message=str(exc))
        except ConfigError as exc:
            return Error(code="invalid_inputs", message=str(exc))
        except ConnectionResolutionError as exc:
            return Error(code="invalid_connections", message=str(exc))
        try:
            run_id = orch.submit(workflow, message.inputs, run_id=message.run_id, deadline_ms=message.deadline_ms,
                                 source=source, idempotency_key=message.idempotency_key)
        except ValueError as exc:
            return Error(code="invalid_request", message=str(exc))
        return SubmitAccepted(run_id=run_id)

    def compile(self, document: dict[str, Any] | msgspec.Raw, manifest_hash: str = "") -> tuple[Any, tuple[str, bytes]]:
        """Compile ``document`` (a workflow manifest, a plan or a pipeline, decoded or still
        encoded as it arrived in a ``SubmitRequest``) against the capabilities known so far;
        returns the compiled workflow or plan and its pinned source ``(hash, bytes)`` (the
        document as submitted, connections unresolved).

        Raises:
            ManifestError: naming each problem's path (an encoded document that is not a map
                is refused as ``manifest: expected an object``).
            actors.planner.ConnectionResolutionError: naming a pipeline's connection defined nowhere.
        """
        registry = self._orch.registry
        if registry.version != self._catalog_version:  # a worker came or went since the last look
            self._catalog_version = registry.version
            catalog = registry.catalog()
            if any(self._known.get(cap) != meta for cap, meta in catalog.items()):
                self._known.update(catalog)
                self._compiled.clear()  # compiled against older metadata
        encoded = isinstance(document, msgspec.Raw)
        key = (bytes(document) if encoded else _encode(document), manifest_hash)
        found = self._compiled.get(key)
        if found is None:
            if encoded:  # decoded only the first time these bytes arrive
                document = _decode_document(key[0])
            kind = document_kind(document)
            workflow = compile_document(document, self._known, kind=kind, manifest_hash=manifest_hash,
                                        connections=self._orch.connections, source=f"submitted {kind}")
            if len(self._compiled) >= 256:
                self._compiled.clear()
            found = self._compiled[key] = (workflow, encode_source(document, workflow, kind=kind))
        return found

    def workers(self) -> list[WorkerRecord]:
        """The live workers as clients see them."""
        now = self._orch.now()
        return [
            WorkerRecord(
                worker_id=w.worker_id,
                host=w.host,
                pid=w.pid,
                capabilities=sorted(w.capabilities),
                slots=w.slots,
                in_flight=len(w.in_flight),
                last_seen_ms_ago=max(now - w.last_seen_ms, 0),
            )
            for w in self._orch.registry
        ]

    def progress(self, run_id: str, entries: list[Any]) -> None:
        """Send the steps that just ended to the run's watchers."""
        watchers = self._watchers.get(run_id)
        if watchers:
            progress = RunProgress(run_id=run_id, steps=trace_dicts(entries))
            for identity in watchers:
                self._orch.send_client(identity, progress)

    def run_ended(self, result: RunResult) -> None:
        """Answer the clients waiting for the run; forget the oldest ended runs past the bound."""
        waiting = self._waiting.pop(result.run_id, []) + self._watchers.pop(result.run_id, [])
        if waiting:
            status = run_status(result)
            for identity in waiting:
                self._orch.send_client(identity, status)
        self._finished.append(result.run_id)
        while len(self._finished) > self._keep:
            self._orch.forget(self._finished.popleft())
