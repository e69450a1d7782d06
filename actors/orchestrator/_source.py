"""A run's pinned workflow source: the manifest document and the capability metadata it was
compiled against, encoded once and identified by their hash.

A run recovered after a crash is compiled again from exactly these bytes, so it resumes with
the manifest (and the capability contracts) it started with, whatever the daemon has learnt
since.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import msgspec

from actors.orchestrator.engine import CompiledWorkflow, compile_workflow
from protocols.capability import CapabilityMetadata
from protocols.manifest import manifest_from_data

__all__ = ["WorkflowSource", "compile_source", "decode_source", "encode_source"]


class WorkflowSource(msgspec.Struct, frozen=True, kw_only=True):
    """Everything needed to compile a run's workflow again.

    Attributes:
        manifest: the decoded manifest document as submitted.
        catalog: capability id -> metadata of every capability the workflow uses.
        manifest_hash: the client's hash of the manifest file (step system metadata).
        defaults: daemon-wide input defaults.
        worktree: the worktree put in every step's system metadata.
    """

    manifest: dict[str, Any]
    catalog: dict[str, CapabilityMetadata]
    manifest_hash: str = ""
    defaults: dict[str, Any] = {}
    worktree: str = ""


_encoder = msgspec.msgpack.Encoder(order="deterministic")
_decoder = msgspec.msgpack.Decoder(WorkflowSource)


def encode_source(
    document: Mapping[str, Any],
    workflow: CompiledWorkflow,
) -> tuple[str, bytes]:
    """Return ``(hash, bytes)`` of the source of ``workflow`` compiled from ``document``.

    Only the metadata of the capabilities the workflow uses is kept, so the hash changes only
    when the manifest or one of its capabilities' contracts does.
    """
    used = {cap: workflow.catalog[cap] for cap in sorted(workflow.capabilities) if cap in workflow.catalog}
    source = WorkflowSource(
        manifest=dict(document),
        catalog=used,
        manifest_hash=workflow.manifest_hash,
        defaults=dict(workflow.defaults),
        worktree=workflow.worktree,
    )
    body = _encoder.encode(source)
    return hashlib.sha256(body).hexdigest(), body


def decode_source(body: bytes) -> WorkflowSource:
    """Decode bytes made by :func:`encode_source`.

    Raises:
        msgspec.DecodeError: when the bytes are not a source (a damaged journal row).
    """
    return _decoder.decode(body)


def compile_source(body: bytes) -> CompiledWorkflow:
    """Compile the workflow pinned in ``body`` again.

    Raises:
        msgspec.DecodeError: when the bytes are not a source.
        protocols.errors.ManifestError: when it no longer compiles (a newer ontoflow's rules).
    """
    source = decode_source(body)
    manifest = manifest_from_data(source.manifest, source="journaled manifest")
    return compile_workflow(manifest, source.catalog, defaults=source.defaults, manifest_hash=source.manifest_hash,
                            worktree=source.worktree)
