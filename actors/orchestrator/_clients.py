"""The daemon's client API: answers ``protocols.client`` requests for one orchestrator.

Run state stays in the orchestrator; this module only translates requests into its calls
(submit, status, cancel, the registry) and results into replies. A request that fails gets an
``Error`` with a code and a message naming what is wrong, never a stack trace; an unexpected
failure is logged here with its location and answered ``internal``.

Manifests are compiled against the metadata of every capability a live worker offers or has
offered since the daemon started, so a run can be submitted while its workers reconnect; its
steps then wait for a worker, up to their schedule-to-start timeout.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import msgspec
import structlog

from actors.orchestrator._actor import Orchestrator, UnknownRunError, _where
from actors.orchestrator._results import RunResult
from actors.orchestrator.engine import compile_workflow
from protocols.capability import CapabilityMetadata
from protocols.client import (
    CancelRun,
    Error,
    RunStatus,
    Status,
    Submit,
    SubmitAccepted,
    WorkerRecord,
    Workers,
    WorkersInfo,
)
from protocols.errors import ManifestError
from protocols.manifest import manifest_from_data
from runtime.errors import ConfigError
from runtime.inputs import check_inputs

__all__ = ["ClientService"]

log = structlog.get_logger()


class ClientService:
    """Serves the client API of ``orchestrator`` (installs itself as its client handler).

    Args:
        orchestrator: the orchestrator whose runs and workers clients ask about.
        keep_finished: how many ended runs stay queryable before the oldest is forgotten.
    """

    def __init__(self, orchestrator: Orchestrator, *, keep_finished: int = 10_000) -> None:
        self._orch = orchestrator
        self._known: dict[str, CapabilityMetadata] = {}
        self._waiting: dict[str, list[bytes]] = {}
        self._finished: deque[str] = deque()
        self._keep = keep_finished
        # Compiled workflows by manifest bytes: a client submitting the same manifest again
        # (the common case) costs one encode, not a validation and a compilation.
        self._compiled: dict[bytes, Any] = {}
        orchestrator.client_handler = self.handle
        orchestrator.on_run_ended.append(self._run_ended)

    def handle(self, identity: bytes, message: Any) -> None:
        """Answer one client message (called by the orchestrator's receive loop)."""
        try:
            reply = self._answer(identity, message)
        except Exception as exc:  # a bug here must not reach the client as a trace
            log.error("client_request_failed", op=type(message).__name__, error=type(exc).__name__, where=_where(exc))
            reply = Error(code="internal", message="the daemon failed to answer (see its log)")
        if reply is not None:
            self._orch.send_client(identity, reply)

    def _answer(self, identity: bytes, message: Any) -> Any:
        orch = self._orch
        match message:
            case Submit():
                return self._submit(message)
            case Status(run_id=run_id, wait=wait):
                try:
                    result = orch.status(run_id)
                except UnknownRunError:
                    return Error(code="unknown_run", message=f"no run {run_id} here")
                if result is not None:
                    return _run_status(result)
                if wait:
                    self._waiting.setdefault(run_id, []).append(identity)
                    return None
                return RunStatus(run_id=run_id, status="running")
            case Workers():
                return WorkersInfo(workers=self.workers())
            case CancelRun(run_id=run_id, reason=reason):
                try:
                    orch.cancel(run_id, reason)
                    result = orch.status(run_id)
                except UnknownRunError:
                    return Error(code="unknown_run", message=f"no run {run_id} here")
                log.info("run_cancel_requested", run_id=run_id)
                return _run_status(result) if result is not None else RunStatus(run_id=run_id, status="cancelling")
            case _:
                return Error(code="invalid_request", message=f"{type(message).__name__} is not a request")

    def _submit(self, message: Submit) -> Any:
        catalog = self._orch.registry.catalog()
        if any(self._known.get(cap) != meta for cap, meta in catalog.items()):
            self._known.update(catalog)
            self._compiled.clear()  # compiled against older metadata
        key = _encode((message.manifest, message.manifest_hash))
        try:
            workflow = self._compiled.get(key)
            if workflow is None:
                manifest = manifest_from_data(message.manifest, source="submitted manifest")
                workflow = compile_workflow(manifest, self._known, manifest_hash=message.manifest_hash)
                if len(self._compiled) >= 256:
                    self._compiled.clear()
                self._compiled[key] = workflow
            if message.inputs:
                check_inputs(message.inputs, self._known)
        except ManifestError as exc:
            return Error(code="invalid_manifest", message=str(exc))
        except ConfigError as exc:
            return Error(code="invalid_inputs", message=str(exc))
        try:
            run_id = self._orch.submit(workflow, message.inputs, run_id=message.run_id, deadline_ms=message.deadline_ms)
        except ValueError as exc:
            return Error(code="invalid_request", message=str(exc))
        return SubmitAccepted(run_id=run_id)

    def workers(self) -> list[WorkerRecord]:
        """The live workers as clients see them."""
        now = self._orch._clock()
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

    def _run_ended(self, result: RunResult) -> None:
        for identity in self._waiting.pop(result.run_id, []):
            self._orch.send_client(identity, _run_status(result))
        self._finished.append(result.run_id)
        while len(self._finished) > self._keep:
            self._orch.forget(self._finished.popleft())


_encode = msgspec.msgpack.Encoder(order="deterministic").encode


def _run_status(result: RunResult) -> RunStatus:
    return RunStatus(
        run_id=result.run_id,
        status=result.status,
        error=result.error,
        context=result.context,
        trace=[msgspec.to_builtins(entry) for entry in result.trace],
        started_ms=result.started_ms,
        ended_ms=result.ended_ms,
    )
