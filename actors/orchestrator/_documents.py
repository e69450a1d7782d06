"""Submitted documents: the catalogue they are compiled against, and what is kept of them.

The catalogue is the metadata of every capability a worker has offered (journaled, so it
survives a restart) or the daemon was told of at start (``WorkerRegistry.known``), read again
whenever the registry's version moves (an entry dropped from a full catalogue to make room
leaves it then too): a run can be submitted while its workers are away (its steps then wait for
a worker); a capability never seen, or dropped, is refused naming it.

A submitted document (a workflow manifest, an execution plan or an OML pipeline, told apart by
content) is compiled against the catalogue, with a pipeline's ``@name`` connections resolved
from the daemon's ``connections``; its pinned source is the document as submitted. Admitting a
submit also runs the static contract check (:class:`ContractGate`, ``ontoflow check``'s) and
checks the inputs against the schemas the capabilities declare. What does not depend on the inputs' values (the compiled
document, its source, the contract verdict) is kept by the document's bytes, hash, worktree
and the input keys: a client submitting the same document again, the common case, costs one
lookup. Everything kept is dropped when the catalogue changes, and when it passes 256 documents
or 64 MiB of them (as encoded). An ended run lets its compiled document go too
(``_run_table.EndedEngine``).

A submit whose document the contract check refuses is answered ``invalid_manifest`` with the
report the command prints, before any run exists; a refusal shows its first 50 findings (or
loader problems) and counts the rest (``... and K more``), in the reply and in the
``document_refused`` log line. The keys of the submit's inputs count as provided on every
path, as a manifest's declared ``inputs`` do.

**What a submit may cost the loop.** A production engine bounds the work one request can buy
by the size of what it carries, deterministically, and never does the same refused work twice;
it does not measure it by the clock (a verdict that depends on the machine's load is not a
verdict). So: the checker explores at most 2,000 states plus one a block
(``actors.checker.state_budget``, the same for ``ontoflow check``, ``run`` and a submit, so they
never disagree), following only the keys some capability reads; a document past it is refused
``analysis-limit``. Everything kept here is keyed by the document's digest, not its bytes (256
documents of 64 MiB were 16 GiB of keys), and a document that does not compile or is refused is
remembered as such: resubmitting it costs a hash. Bounded is not cheap: a document of 5,000
blocks (the most a manifest has) still takes about a second to compile and check, so the daemon
does that work off its loop (``admit(defer=True)``, ``_admission``); the compile and the check
are pure functions of the document and a copy of the catalogue for that reason.

A submit with an idempotency key is checked by :class:`IdempotencyBook` (``_idempotency``,
re-exported here).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import msgspec
import structlog

from ontoflow.actors.checker._report import SHOWN, render_text  # not the package: it imports this one
from ontoflow.actors.orchestrator._admission import Prepared, compiled_document
from ontoflow.actors.orchestrator._idempotency import IdempotencyBook
from ontoflow.actors.orchestrator._registry import WorkerRegistry
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.client_limits import input_key_problem
from ontoflow.protocols.documents import decode_submitted_document
from ontoflow.runtime.errors import ConfigError
from ontoflow.runtime.inputs import CatalogInputCheck

__all__ = ["Admitted", "ContractGate", "IdempotencyBook", "SubmittedDocuments"]

log = structlog.get_logger()

_encode = msgspec.msgpack.Encoder(order="deterministic").encode

#: Documents (and admissions) kept; past it the cache starts afresh (clients submit few kinds).
_KEPT = 256

#: The bytes (as encoded) of the documents kept, in all; past it the cache starts afresh too. A
#: compiled document holds several times its bytes: 256 distinct documents of 20 MB were 46 GB.
_KEPT_BYTES = 64 * 2**20

#: A document larger than this (as encoded) is copied and digested off the loop, with its check:
#: both took 0.35 s of a daemon's loop for a document of 60 MB, twice (before and after its check).
_DIGESTED_IN_LOOP = 2**20


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


def digest(body: bytes) -> bytes:
    """What a document is kept by: a digest of its bytes (the bytes themselves may be 64 MiB)."""
    return hashlib.blake2b(body, digest_size=20).digest()


class ContractGate:
    """Checks submitted documents against a catalogue (see the module docstring).

    Args:
        capacity: how many (document, input keys) verdicts are kept.
    """

    def __init__(self, capacity: int = 256) -> None:
        self._capacity = capacity
        self._verdicts: OrderedDict[tuple[bytes, tuple[str, ...]], str | None] = OrderedDict()

    def clear(self) -> None:
        """Forget every verdict (the catalogue changed)."""
        self._verdicts.clear()

    def keys(self) -> list[tuple[bytes, tuple[str, ...]]]:
        """What verdicts are kept by (a snapshot for a check off the loop)."""
        return list(self._verdicts)

    def known(self, key: tuple[bytes, tuple[str, ...]]) -> bool:
        """Whether the verdict on ``(document digest, sorted input keys)`` is kept."""
        return key in self._verdicts

    def refusal(self, body: bytes, given: Iterable[str], catalog: Mapping[str, CapabilityMetadata], *,
                found: bytes | None = None) -> str | None:
        """The report to refuse the document encoded in ``body`` (whose digest is ``found``, if
        known) with (its first findings, the rest counted), or None when it passes.

        Raises:
            ontoflow.protocols.ManifestError: when ``body`` is not a document.
        """
        keys = tuple(sorted(given))
        key = (found or digest(body), keys)
        kept = self._verdicts.get(key, False)
        if kept is not False:
            self._verdicts.move_to_end(key)
            return kept
        verdict, refused = self.verdict(body, keys, catalog)
        self.remember(key, verdict, refused)
        return verdict

    @staticmethod
    def verdict(body: bytes, keys: tuple[str, ...], catalog: Mapping[str, CapabilityMetadata]
                ) -> tuple[str | None, dict[str, Any] | None]:
        """The contract check of the document in ``body`` with the inputs ``keys`` given: its
        refusal report (None: it passes) and what the refusal's log line says. Pure (no state,
        no log): the daemon runs it off its loop.

        Raises:
            ontoflow.protocols.ManifestError: when ``body`` is not a document.
        """
        document: Any = decode_submitted_document(body)
        if keys and isinstance(document, dict) and "nodes" in document:
            document = {**document, "inputs": {**{k: {} for k in keys}, **dict(document.get("inputs") or {})}}
        from ontoflow.actors.checker import check_document  # here: the checker imports this package back

        report = check_document(document, catalog, name="submitted document")
        if report.ok:
            return None, None
        verdict = render_text(report, limit=SHOWN)
        return verdict, {"kind": report.kind, "errors": len(report.errors), "findings": len(report.findings),
                         "states": report.states}

    def remember(self, key: tuple[bytes, tuple[str, ...]], verdict: str | None, refused: dict[str, Any] | None) -> None:
        """Keep the verdict on ``key`` (``verdict``'s answer; a refusal is logged, once)."""
        if refused is not None:
            log.info("document_refused", digest=key[0].hex(), **refused, report=verdict)
        self._verdicts[key] = verdict
        while len(self._verdicts) > self._capacity:
            self._verdicts.popitem(last=False)


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
        # Moves only when the metadata changed (not at each worker that comes or goes, as the
        # registry's version does): what a check off the loop found is kept unless it did.
        self._generation = 0
        self._contracts = ContractGate()
        self._inputs = CatalogInputCheck(self._known)
        # By (document digest, hash, worktree): compiled workflows and pinned sources, or the
        # error compiling it raised (a document that does not compile is not compiled again).
        self._compiled: dict[tuple[bytes, str, str], tuple[Any, tuple[str, bytes]] | Exception] = {}
        self._compiled_bytes = 0  # of the documents compiled and kept (their pinned sources)
        # By (document digest, hash, worktree, input keys): what a submit of them is admitted as.
        self._admitted: dict[tuple[bytes, str, str, tuple[str, ...]], Admitted] = {}
        # The last document admitted and its digest: a client usually submits the same one run
        # after run, and comparing its bytes costs far less than digesting them (per submit).
        self._last: tuple[bytes, bytes] = (b"", digest(b""))
        # The last large document a check digested off the loop, and its digest (``Prepared.document``).
        self._digested: tuple[Any, bytes] = (None, b"")

    def _refresh(self) -> None:
        registry = self._registry
        if registry.version != self._version:  # a worker came or went since the last look
            self._version = registry.version
            catalog = registry.known()  # offered by a live worker or ever known, and not dropped
            # The copy IS the registry's catalogue, never a union with older ones: an entry dropped
            # to make room (``_catalogue_room.py``) leaves it too, or a peer repeating Readys of
            # new ids grew it (and the ``Catalog`` reply) without bound, and a document naming a
            # dropped capability was accepted now and refused after a restart.
            if catalog != self._known:  # a dict's comparison: as cheap as the old look at each entry
                self._known = catalog  # a new dict: what was compiled against the old one keeps it
                self._compiled.clear()  # compiled against older metadata
                self._compiled_bytes = 0
                self._admitted.clear()
                self._contracts.clear()
                self._inputs = CatalogInputCheck(self._known)
                self._generation += 1

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
        worktree: str = "", *, defer: bool = False,
    ) -> Admitted | Callable[[], Prepared]:
        """What a submit of ``document`` with ``inputs`` starts: compiled, pinned, contract
        checked (a refusal is returned, not raised), and the inputs checked.

        ``defer``: when the compile or the contract check is not kept yet (up to a second for a
        document of 5,000 blocks), return that work instead, as a pure function to run off the
        loop (on a copy of the catalogue); hand its ``Prepared`` to :meth:`keep`, then admit again.

        Raises:
            ManifestError: as ``compile``, or when the document is not one.
            actors.pipelines.ConnectionResolutionError: as ``compile``.
            runtime.errors.ConfigError: naming an input that breaks a declared schema, or an input
                key too long (``protocols.client_limits.input_key_problem``).
        """
        if self._registry.version != self._version:  # ``_refresh`` and ``_body`` in line: once per submit
            self._refresh()
        raw = isinstance(document, msgspec.Raw)
        if raw and document is self._digested[0]:  # its work digested it: not again in the loop
            body, found = None, self._digested[1]
        elif raw and defer and len(document) > _DIGESTED_IN_LOOP:
            too_long = input_key_problem(tuple(inputs))
            if too_long is not None:
                raise ConfigError(too_long)
            return self._pending_large(document, inputs, manifest_hash, worktree)
        else:
            body = bytes(document) if raw else _encode(document)
            last = self._last
            found = last[1] if body == last[0] else digest(body)
        key = (found, manifest_hash, worktree, tuple(inputs))
        admitted = self._admitted.get(key)
        if admitted is None:
            too_long = input_key_problem(key[3])  # once per set of keys: a kept admission had them checked
            if too_long is not None:
                raise ConfigError(too_long)
            if body is None:
                body = bytes(document)
            if defer:
                work = self._pending(body, found, document, inputs, manifest_hash, worktree)
                if work is not None:
                    return work
            workflow, source = self._compile(body, document, manifest_hash, worktree, found)
            refusal = self._contracts.refusal(body, inputs, self._known, found=found)
            if len(self._admitted) >= _KEPT:
                self._admitted.clear()
            admitted = self._admitted[key] = Admitted(workflow, source, refusal)
        if body is not None and found is not self._last[1]:  # the same document again (the usual submit) keeps its pair
            self._last = (body, found)
        if inputs and admitted.refusal is None:
            self._inputs.check(inputs)
        return admitted

    def _pending(self, body: bytes, found: bytes, document: Any, inputs: Mapping[str, Any], manifest_hash: str,
                 worktree: str) -> Callable[[], Prepared] | None:
        compiled_key = (found, manifest_hash, worktree)
        compiled = self._compiled.get(compiled_key)
        verdict_key = (found, tuple(sorted(inputs)))
        known = self._contracts.known(verdict_key)
        if isinstance(compiled, Exception) or (compiled is not None and known):
            return None  # refused already, or only lookups left
        catalog, version, connections = dict(self._known), self._generation, self._connections

        def work() -> Prepared:
            result = compiled if compiled is not None else \
                compiled_document(body, document, catalog, connections, manifest_hash, worktree)
            verdict = None if known or isinstance(result, Exception) else \
                ContractGate.verdict(body, verdict_key[1], catalog)
            return Prepared(version, compiled_key, result, verdict_key, verdict)

        return work

    def _pending_large(self, document: msgspec.Raw, inputs: Mapping[str, Any], manifest_hash: str,
                       worktree: str) -> Callable[[], Prepared]:
        """The work for a large document (see :data:`_DIGESTED_IN_LOOP`): its copy and its digest
        too, then what ``_pending``'s work does, on snapshots of what is kept."""
        compiled, verdicts = dict(self._compiled), set(self._contracts.keys())
        catalog, version, connections = dict(self._known), self._generation, self._connections

        def work() -> Prepared:
            body = bytes(document)
            found = digest(body)
            compiled_key, verdict_key = (found, manifest_hash, worktree), (found, tuple(sorted(inputs)))
            result = compiled.get(compiled_key) or compiled_document(body, document, catalog, connections,
                                                                     manifest_hash, worktree)
            verdict = None if verdict_key in verdicts or isinstance(result, Exception) else \
                ContractGate.verdict(body, verdict_key[1], catalog)
            return Prepared(version, compiled_key, result, verdict_key, verdict, document)

        return work

    def keep(self, prepared: Prepared) -> bool:
        """Keep what ``admit(defer=True)``'s work found; False (nothing kept) when the catalogue changed
        since (``admit`` then does the work itself, against the new one)."""
        if self._registry.version != self._version:
            self._refresh()
        if prepared.document is not None:
            self._digested = (prepared.document, prepared.compiled_key[0])
        if prepared.version != self._generation:
            return False
        self._store(prepared.compiled_key, prepared.compiled)
        if prepared.verdict is not None and not self._contracts.known(prepared.verdict_key):
            self._contracts.remember(prepared.verdict_key, *prepared.verdict)
        return True

    def _compile(self, body: bytes, document: Any, manifest_hash: str, worktree: str,
                 found: bytes | None = None) -> tuple[Any, tuple[str, bytes]]:
        key = (found or digest(body), manifest_hash, worktree)
        found = self._compiled.get(key)
        if found is None:
            found = self._store(key, compiled_document(body, document, self._known, self._connections, manifest_hash, worktree))
        if isinstance(found, Exception):
            raise found.with_traceback(None)  # raised again and again: no traceback piles up on it
        return found

    def _store(self, key: tuple[bytes, str, str], found: Any) -> Any:
        size = 0 if isinstance(found, Exception) or key in self._compiled else len(found[1][1])
        if len(self._compiled) >= _KEPT or self._compiled_bytes + size > _KEPT_BYTES:
            # Admissions hold compiled documents too: every one kept is one of these.
            self._compiled.clear()
            self._admitted.clear()
            self._compiled_bytes = 0
        self._compiled_bytes += size
        if isinstance(found, Exception):
            log.info("document_refused", digest=key[0].hex(), problems=len(getattr(found, "problems", ())),
                     report=str(found))
        self._compiled[key] = found
        return found


def _body(document: dict[str, Any] | msgspec.Raw) -> bytes:
    """The document's bytes: as they arrived, or encoded deterministically."""
    return bytes(document) if isinstance(document, msgspec.Raw) else _encode(document)
