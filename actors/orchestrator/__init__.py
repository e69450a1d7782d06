"""The orchestrator: a pure engine inside an actor composed of owned parts (a run table, a
worker pool, durability), with the client and trigger services composed around it."""

from ontoflow.actors.orchestrator._artifacts import ArtifactReader, artifact_roots_for
from ontoflow.actors.orchestrator._clients import ClientService
from ontoflow.actors.orchestrator._compose import Composition, compose_edge, compose_orchestrator
from ontoflow.actors.orchestrator._domains import DomainBook, ExpectedDomain, placeholder_metadata
from ontoflow.actors.orchestrator._domains_file import DomainsFile, DomainsFileEntry, expected_domain, read_domains_file
from ontoflow.actors.orchestrator._edge import INTENT_KEY, EdgeService, answer_text, question_output
from ontoflow.actors.orchestrator._durability import Durability, RecoveryReport
from ontoflow.actors.orchestrator._orchestrator import Orchestrator, UnknownRunError, wall_clock_ms
from ontoflow.actors.orchestrator._queries import Queries, Waiters
from ontoflow.actors.orchestrator._pending_queue import PendingQueue
from ontoflow.actors.orchestrator._registry import InFlight, WorkerInfo, WorkerRegistry
from ontoflow.actors.orchestrator._results import RunResult
from ontoflow.actors.orchestrator._run_table import AnswerRefused, Run, RunTable
from ontoflow.actors.orchestrator._sessions import MAX_CONVERSATIONS, SessionBook, SessionRecord
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
from ontoflow.actors.orchestrator._worker_pool import WorkerPool

__all__ = [
    "AnswerRefused",
    "ArtifactReader",
    "ClientService",
    "Composition",
    "DOCUMENT_KINDS",
    "DomainBook",
    "DomainsFile",
    "DomainsFileEntry",
    "Durability",
    "EdgeService",
    "ExpectedDomain",
    "INTENT_KEY",
    "InFlight",
    "MAX_CONVERSATIONS",
    "OBSERVATION_KEY",
    "Orchestrator",
    "PendingQueue",
    "Queries",
    "RecoveryReport",
    "Run",
    "RunResult",
    "RunTable",
    "SessionBook",
    "SessionRecord",
    "TriggerService",
    "UnknownRunError",
    "Waiters",
    "WorkerInfo",
    "WorkerPool",
    "WorkerRegistry",
    "WorkflowSource",
    "answer_text",
    "artifact_roots_for",
    "compile_document",
    "compile_source",
    "compose_edge",
    "compose_orchestrator",
    "decode_source",
    "document_kind",
    "encode_source",
    "expected_domain",
    "placeholder_metadata",
    "question_output",
    "read_domains_file",
    "wall_clock_ms",
]
