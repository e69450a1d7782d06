"""A run's pinned source: the submitted document and the capability metadata it was compiled
against, encoded once and identified by their hash.

A run recovered after a crash is compiled again from exactly these bytes, so it resumes with
the document (and the capability contracts) it started with, whatever the daemon has learnt
since.

Three kinds of document are accepted, told apart by content (:func:`document_kind`, the one
rule of ``protocols.documents``): an OML pipeline (it has ``oml_version``), an execution plan
(``steps`` and no ``nodes``), otherwise a workflow manifest. A pipeline is stored as
submitted, its ``connection: "@name"`` values unresolved: they are resolved each time it is
compiled (at submit and again at recovery), from the daemon's connections map or
``ONTOFLOW_CONNECTION_<NAME>``, so a secret never reaches the journal. Plans and pipelines
pin the whole catalog known when they were compiled (follow-up capabilities are chosen by role
among all of them); workflows only the capabilities they use.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import msgspec

from ontoflow.actors.orchestrator.engine import CompiledWorkflow, compile_workflow
from ontoflow.actors.orchestrator.plans import CompiledPlan, compile_plan
from ontoflow.actors.pipelines import compile_pipeline, resolve_connections
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.documents import document_kind
from ontoflow.protocols.manifest import manifest_from_data
from ontoflow.protocols.oml import pipeline_from_data
from ontoflow.protocols.plan import plan_from_data

__all__ = ["DOCUMENT_KINDS", "WorkflowSource", "compile_document", "compile_source", "decode_source", "document_kind",
           "encode_source"]

#: The kinds of document a daemon runs.
DOCUMENT_KINDS = ("pipeline", "plan", "workflow")


class WorkflowSource(msgspec.Struct, frozen=True, kw_only=True):
    """Everything needed to compile a run's workflow again.

    Attributes:
        manifest: the decoded manifest document as submitted.
        catalog: capability id -> metadata of every capability the workflow uses.
        manifest_hash: the client's hash of the manifest file (step system metadata).
        defaults: daemon-wide input defaults.
        worktree: the worktree put in every step's system metadata.
        kind: ``workflow``, ``plan`` or ``pipeline`` (see :func:`document_kind`).
    """

    manifest: dict[str, Any]
    catalog: dict[str, CapabilityMetadata]
    manifest_hash: str = ""
    defaults: dict[str, Any] = {}
    worktree: str = ""
    kind: str = "workflow"


# Insertion order, not sorted keys: a manifest's block order is meaning (a CALL returns to the
# block declared after it), so the pinned document keeps the order it was submitted in; the
# catalog and the defaults are sorted here, so the same document gives the same bytes.
_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(WorkflowSource)


def encode_source(
    document: Mapping[str, Any],
    workflow: CompiledWorkflow | CompiledPlan,
    *,
    kind: str = "workflow",
) -> tuple[str, bytes]:
    """Return ``(hash, bytes)`` of the source of ``workflow`` compiled from ``document``.

    For a workflow only the metadata of the capabilities it uses is kept, so the hash changes
    only when the manifest or one of its capabilities' contracts does. ``document`` must be the
    document as submitted (a pipeline's connections unresolved).
    """
    if isinstance(workflow, CompiledPlan):
        used = {cap: workflow.catalog[cap] for cap in sorted(workflow.catalog)}
        digest = workflow.plan_hash
    else:
        used = {cap: workflow.catalog[cap] for cap in sorted(workflow.capabilities) if cap in workflow.catalog}
        digest = workflow.manifest_hash
    source = WorkflowSource(
        manifest=dict(document),
        catalog=used,
        manifest_hash=digest,
        defaults={key: workflow.defaults[key] for key in sorted(workflow.defaults)},
        worktree=workflow.worktree,
        kind=kind,
    )
    body = _encoder.encode(source)
    return hashlib.sha256(body).hexdigest(), body


def decode_source(body: bytes) -> WorkflowSource:
    """Decode bytes made by :func:`encode_source`.

    Raises:
        msgspec.DecodeError: when the bytes are not a source (a damaged journal row).
    """
    return _decoder.decode(body)


def compile_document(
    document: Mapping[str, Any],
    catalog: Mapping[str, CapabilityMetadata],
    *,
    kind: str | None = None,
    manifest_hash: str = "",
    defaults: Mapping[str, Any] = {},  # noqa: B006 - read, never mutated
    worktree: str = "",
    connections: Mapping[str, Any] | None = None,
    source: str = "submitted document",
    recorded: bool = False,
) -> CompiledWorkflow | CompiledPlan:
    """Compile a workflow manifest, a plan or a pipeline (``kind``, else by content) against
    ``catalog``; a pipeline's or a plan's ``@name`` connections are resolved from ``connections``, then
    ``ONTOFLOW_CONNECTION_<NAME>`` (the result lives in memory only). ``recorded``: a document
    journaled earlier, compiled again: the rules newer than some journals are not applied, so a
    run accepted then is recovered, not refused (a workflow's id, merge-reference and transition
    rules; a plan's second fan-out list; a pipeline's setting given twice, its names, ids and
    connections ending in a newline, its description's bound).

    Raises:
        protocols.errors.ManifestError: naming each problem's path.
        actors.pipelines.ConnectionResolutionError: naming a connection defined nowhere.
    """
    kind = kind or document_kind(document)
    if kind == "workflow":
        manifest = manifest_from_data(document, source=source, recorded=recorded)
        return compile_workflow(manifest, dict(catalog), defaults=defaults, manifest_hash=manifest_hash, worktree=worktree)
    if kind == "pipeline":
        pipeline = pipeline_from_data(document, components=catalog, source=source, recorded=recorded)
        plan = compile_pipeline(pipeline, catalog, recorded=recorded)
    else:
        plan = plan_from_data(document, source=source)
    # A hand-written plan names its connections as a compiled pipeline does (``@name``), and
    # resolves them as ``ontoflow plan run --connections`` does.
    plan = resolve_connections(plan, connections or {})
    return compile_plan(plan, catalog, defaults=defaults, plan_hash=manifest_hash, worktree=worktree, recorded=recorded)


def compile_source(body: bytes, *, connections: Mapping[str, Any] | None = None) -> CompiledWorkflow | CompiledPlan:
    """Compile the workflow, plan or pipeline pinned in ``body`` again (a pipeline's
    connections resolved anew, see :func:`compile_document`).

    Raises:
        msgspec.DecodeError: when the bytes are not a source.
        protocols.errors.ManifestError: when it no longer compiles (a newer ontoflow's rules).
        actors.pipelines.ConnectionResolutionError: when a pipeline's connection is defined nowhere.
    """
    source = decode_source(body)
    return compile_document(source.manifest, source.catalog, kind=source.kind, manifest_hash=source.manifest_hash,
                            defaults=source.defaults, worktree=source.worktree, connections=connections,
                            source=f"journaled {source.kind}", recorded=True)
