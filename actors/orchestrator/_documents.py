"""Submitted documents: the catalogue they are compiled against, and what is kept of them.

The catalogue is the metadata of every capability a worker has offered (journaled, so it
survives a restart) or the daemon was told of at start (``WorkerRegistry.known``), read again
whenever the registry's version moves: a run can be submitted while its workers are away (its
steps then wait for a worker); a capability never seen is refused naming it.

A submitted document (a workflow manifest, an execution plan or an OML pipeline, told apart by
content) is compiled against the catalogue, with a pipeline's ``@name`` connections resolved
from the daemon's ``connections``; its pinned source is the document as submitted. Admitting a
submit also runs the static contract check (``_contracts``) and checks the inputs against the
schemas the capabilities declare. What does not depend on the inputs' values (the compiled
document, its source, the contract verdict) is kept by the document's bytes, hash, worktree
and the input keys: a client submitting the same document again, the common case, costs one
lookup. Everything kept is dropped when the catalogue changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from ontoflow.actors.orchestrator._contracts import ContractGate
from ontoflow.actors.orchestrator._registry import WorkerRegistry
from ontoflow.actors.orchestrator._source import compile_document, document_kind, encode_source
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.documents import decode_submitted_document
from ontoflow.runtime.inputs import CatalogInputCheck

__all__ = ["Admitted", "SubmittedDocuments"]

_encode = msgspec.msgpack.Encoder(order="deterministic").encode

#: Documents (and admissions) kept; past it the cache starts afresh (clients submit few kinds).
_KEPT = 256


class Admitted(msgspec.Struct, frozen=True):
    """A document as a submit may start it: compiled, pinned, and the contract check's verdict.

    Attributes:
        workflow: the compiled workflow or plan (a ``RunEngine``).
        source: its pinned source ``(hash, bytes)``.
        refusal: the contract check's report when it refuses the document, else None.
    """

    workflow: Any
    source: tuple[str, bytes]
    refusal: str | None


class SubmittedDocuments:
    """Compiles and admits submitted documents (see the module docstring).

    Args:
        registry: the live workers and the catalogue.
        connections: connection name -> value, for pipelines' ``@name`` connections.
    """

    def __init__(self, registry: WorkerRegistry, connections: Mapping[str, Any]) -> None:
        self._registry = registry
        self._connections = connections
        self._known: dict[str, CapabilityMetadata] = {}
        self._version = -1
        self._contracts = ContractGate()
        self._inputs = CatalogInputCheck(self._known)
        # By (document bytes, hash, worktree): compiled workflows and pinned sources.
        self._compiled: dict[tuple[bytes, str, str], tuple[Any, tuple[str, bytes]]] = {}
        # By (document bytes, hash, worktree, input keys): what a submit of them is admitted as.
        self._admitted: dict[tuple[bytes, str, str, tuple[str, ...]], Admitted] = {}

    def _refresh(self) -> None:
        registry = self._registry
        if registry.version != self._version:  # a worker came or went since the last look
            self._version = registry.version
            catalog = registry.known()  # offered by a live worker or ever known
            if any(self._known.get(cap) != meta for cap, meta in catalog.items()):
                self._known.update(catalog)
                self._compiled.clear()  # compiled against older metadata
                self._admitted.clear()
                self._contracts.clear()
                self._inputs = CatalogInputCheck(self._known)

    def catalog(self) -> dict[str, CapabilityMetadata]:
        """Every capability a submitted document is compiled against (a copy)."""
        self._refresh()
        return dict(self._known)

    def compile(
        self, document: dict[str, Any] | msgspec.Raw, manifest_hash: str = "", worktree: str = ""
    ) -> tuple[Any, tuple[str, bytes]]:
        """Compile ``document`` (decoded, or still encoded as it arrived in a ``SubmitRequest``)
        against the catalogue; returns the compiled workflow or plan and its pinned source
        ``(hash, bytes)`` (the document as submitted, connections unresolved).

        Raises:
            ManifestError: naming each problem's path (an encoded document that is not a map
                is refused as ``manifest: expected an object``).
            actors.pipelines.ConnectionResolutionError: naming a pipeline's connection defined nowhere.
        """
        self._refresh()
        return self._compile(_body(document), document, manifest_hash, worktree)

    def admit(
        self, document: dict[str, Any] | msgspec.Raw, inputs: Mapping[str, Any], manifest_hash: str = "",
        worktree: str = "",
    ) -> Admitted:
        """What a submit of ``document`` with ``inputs`` starts: compiled, pinned, contract
        checked (a refusal is returned, not raised), and the inputs checked.

        Raises:
            ManifestError: as ``compile``, or when the document is not one.
            actors.pipelines.ConnectionResolutionError: as ``compile``.
            runtime.errors.ConfigError: naming an input that breaks a declared schema.
        """
        self._refresh()
        body = _body(document)
        key = (body, manifest_hash, worktree, tuple(inputs))
        admitted = self._admitted.get(key)
        if admitted is None:
            workflow, source = self._compile(body, document, manifest_hash, worktree)
            refusal = self._contracts.refusal(body, inputs, self._known)
            if len(self._admitted) >= _KEPT:
                self._admitted.clear()
            admitted = self._admitted[key] = Admitted(workflow, source, refusal)
        if inputs and admitted.refusal is None:
            self._inputs.check(inputs)
        return admitted

    def _compile(self, body: bytes, document: Any, manifest_hash: str, worktree: str) -> tuple[Any, tuple[str, bytes]]:
        key = (body, manifest_hash, worktree)
        found = self._compiled.get(key)
        if found is None:
            if isinstance(document, msgspec.Raw):  # decoded only the first time these bytes arrive
                document = decode_submitted_document(body)  # total: bad UTF-8 is invalid_manifest
            kind = document_kind(document)
            workflow = compile_document(document, self._known, kind=kind, manifest_hash=manifest_hash, worktree=worktree,
                                        connections=self._connections, source=f"submitted {kind}")
            if len(self._compiled) >= _KEPT:
                self._compiled.clear()
            found = self._compiled[key] = (workflow, encode_source(document, workflow, kind=kind))
        return found


def _body(document: dict[str, Any] | msgspec.Raw) -> bytes:
    """The document's bytes: as they arrived, or encoded deterministically."""
    return bytes(document) if isinstance(document, msgspec.Raw) else _encode(document)
