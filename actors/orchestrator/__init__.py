"""The orchestrator: a pure engine inside an actor shell, journaled when a journal is open."""

from ontoflow.actors.orchestrator._actor import Orchestrator, UnknownRunError, wall_clock_ms
from ontoflow.actors.orchestrator._clients import ClientService
from ontoflow.actors.orchestrator._durable import RecoveryReport
from ontoflow.actors.orchestrator._registry import InFlight, PendingQueue, WorkerInfo, WorkerRegistry
from ontoflow.actors.orchestrator._results import RunResult
from ontoflow.actors.orchestrator._source import (
    DOCUMENT_KINDS,
    WorkflowSource,
    compile_document,
    compile_source,
    decode_source,
    document_kind,
    encode_source,
)
from ontoflow.actors.orchestrator._triggers import OBSERVATION_KEY, TriggerService

__all__ = [
    "ClientService",
    "DOCUMENT_KINDS",
    "InFlight",
    "OBSERVATION_KEY",
    "Orchestrator",
    "PendingQueue",
    "RecoveryReport",
    "RunResult",
    "TriggerService",
    "UnknownRunError",
    "WorkerInfo",
    "WorkerRegistry",
    "WorkflowSource",
    "compile_document",
    "compile_source",
    "decode_source",
    "document_kind",
    "encode_source",
    "wall_clock_ms",
]
