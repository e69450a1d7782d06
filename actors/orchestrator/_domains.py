"""The domain book: which domains this daemon answers sentences for, and from where it learnt them.

A domain (seed 004) is a manifest of goals and the capabilities that serve them. A daemon
learns domains four ways, each replacing what an earlier one said of the same domain id:

1. the journal: every domain a worker announced before a restart (``Durability.journaled_domains``);
2. what it was told to expect (``--domains DIR``, ``--domains-file FILE``): the manifest and the
   metadata of its capabilities (a handlers module imported for its metadata only, or
   placeholders, :func:`placeholder_metadata`);
3. a fixed catalogue handed to ``compose_orchestrator`` (embedders and tests);
4. a worker's ``Ready.domains``: a new domain is a new worker and its manifest, nothing else.

The capabilities of an expected or announced domain join the daemon's catalogue
(``WorkerRegistry.known``) when nobody offers them yet, so a sentence for a domain whose
workers are not connected is planned and waits for a worker under the schedule-to-start
timeout, like any submit. Announced manifests are journaled (beside the capability catalogue)
so a restarted daemon answers for them before their workers are back.

:meth:`DomainBook.catalogue` is what the edge reads before each sentence: one
``actors.intent.Catalogue`` rebuilt only when a domain or one of its capabilities changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec
import structlog

from ontoflow.actors.intent import Catalogue
from ontoflow.actors.orchestrator._registry import WorkerInfo
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.domain import DomainManifest, check_domain, domain_from_data
from ontoflow.protocols.domain_service import declared_metadata
from ontoflow.protocols.errors import ManifestError, Problem
from ontoflow.protocols.intent import INTENT_INPUTS
from ontoflow.protocols.messages import Ready
from ontoflow.runtime.errors import ConfigError

__all__ = ["DomainBook", "ExpectedDomain", "placeholder_metadata"]

log = structlog.get_logger()

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(DomainManifest)


def placeholder_metadata(manifest: DomainManifest) -> dict[str, CapabilityMetadata]:
    """The metadata a domain's capabilities have until a worker announces theirs: what its goals
    pass them (``protocols.domain_service.declared_metadata``) and the reserved intent inputs
    (``protocols.intent.INTENT_INPUTS``).

    A domain expected without handlers is most often an HTTP service behind a bridge worker,
    whose capabilities take the run's confidence and sentence: a plan made before the bridge
    connects must carry them too (the planner sets only what a capability declares), or the
    service is told 1.0 and an empty sentence. A Python handler that does not declare them
    replaces this metadata when its worker announces it, and plans made after carry them not.

    Args:
        manifest: a validated domain manifest.

    Returns:
        capability id -> metadata, for every id in ``manifest.capabilities``.
    """
    placeholders = {}
    for cap, meta in declared_metadata(manifest).items():
        properties = {**INTENT_INPUTS, **meta.input_schema.get("properties", {})}
        placeholders[cap] = msgspec.structs.replace(meta, input_schema={**meta.input_schema, "properties": properties})
    return placeholders


@dataclass(frozen=True, slots=True)
class ExpectedDomain:
    """A domain the daemon was told to expect before its workers connect.

    Attributes:
        manifest: the validated manifest.
        metadata: capability id -> metadata for its capabilities (real or declared).
        source: where it was read (a path), for logs and errors.
    """

    manifest: DomainManifest
    metadata: dict[str, CapabilityMetadata] = field(default_factory=dict)
    source: str = ""


class DomainBook:
    """Every domain this daemon knows (see the module docstring).

    Args:
        known: the daemon's capability catalogue (``WorkerRegistry.known``).
        known_version: a number that changes whenever ``known`` may have (``WorkerRegistry.version``).
        know: adds capabilities to that catalogue, journaled (``WorkerPool.know``).
        record: journals announced manifests, ``record({domain: encoded}, now)``; None: not kept.
        journaled: the manifests a previous run journaled (domain id -> encoded manifest).
        expected: the domains the daemon was told to expect.
        static: a fixed catalogue whose capabilities come with it (not added to ``known``).

    Raises:
        ManifestError: two expected domains with one id.
    """

    def __init__(
        self,
        *,
        known: Callable[[], dict[str, CapabilityMetadata]],
        known_version: Callable[[], int],
        know: Callable[[list[CapabilityMetadata], int], None],
        record: Callable[[dict[str, bytes], int], None] | None = None,
        journaled: Mapping[str, bytes] | None = None,
        expected: Iterable[ExpectedDomain] = (),
        static: Catalogue | None = None,
    ) -> None:
        self._known = known
        self._known_version = known_version
        self._know = know
        self._record = record
        self._manifests: dict[str, DomainManifest] = {}
        self._origin: dict[str, str] = {}
        for domain, body in (journaled or {}).items():
            try:
                self._manifests[domain] = _decoder.decode(body)
                self._origin[domain] = "journal"
            except msgspec.DecodeError:  # written by another version: back when its worker is
                log.warning("journaled_domain_unreadable", domain=domain)
        self._expected = list(expected)
        ids = [e.manifest.domain for e in self._expected]
        twice = sorted({d for d in ids if ids.count(d) > 1})
        if twice:
            raise ManifestError([Problem(path="domain", message=f"{d!r} is expected twice") for d in twice],
                                source="expected domains")
        for e in self._expected:
            self._manifests[e.manifest.domain] = e.manifest
            self._origin[e.manifest.domain] = e.source or "expected"
        self._static_caps: dict[str, CapabilityMetadata] = dict(static.capabilities) if static is not None else {}
        for manifest in (static.domains.values() if static is not None else ()):
            self._manifests[manifest.domain] = manifest
            self._origin[manifest.domain] = "catalogue"
        self._placed = False  # the expected domains' capabilities are in the catalogue
        self.version = 0
        # (book version, registry version, the capabilities it was built from, the catalogue)
        self._built: tuple[int, int, dict[str, CapabilityMetadata], Catalogue] | None = None
        self._skipped: set[tuple[str, int]] = set()
        self._watched: set[str] = set()

    def __contains__(self, domain: object) -> bool:
        return domain in self._manifests

    def domains(self) -> dict[str, str]:
        """Domain id -> where it was learnt (``journal``, a path, ``catalogue``, ``worker W``)."""
        return dict(sorted(self._origin.items()))

    def unknown(self, domains: Iterable[str]) -> list[str]:
        """Those of ``domains`` this book knows nothing of yet (neither expected, journaled, in
        the fixed catalogue nor announced), sorted: an intent adapter chosen for one is unused."""
        return sorted({d for d in domains if d not in self._manifests})

    def check_adapters(self, choice: Iterable[str], *, told: bool) -> None:
        """Check the domains an intent adapter was chosen for (``--intent-adapter DOMAIN=``,
        ``[edge.adapters]``; ``"*"`` is every domain): one this book does not know is unused.

        Told its domains (``--domains``, ``--domains-file``), the daemon refuses such a choice:
        most often a misspelt domain. Learning them from workers only, it cannot know yet: it
        logs the choice now, and again when a worker first announces that domain (from then on
        that adapter reads its sentences). Journaled domains count as known.

        Args:
            choice: the domain ids of the choice.
            told: whether the daemon was told its domains at start.

        Raises:
            ConfigError: ``told`` and a domain is unknown (naming it and the known ones).
        """
        unknown = self.unknown(d for d in choice if d != "*")
        if not unknown:
            return
        if told:
            known = ", ".join(sorted(self._manifests)) or "none"
            raise ConfigError(
                f"--intent-adapter DOMAIN= / [edge.adapters]: {', '.join(map(repr, unknown))}: no such domain is expected "
                f"or journaled here (known: {known}); correct the name, or list the domain in --domains-file")
        log.warning("intent_adapter_domain_not_known", domains=unknown,
                    note="no worker has announced it yet: its adapter is used once one does")
        self._watched.update(unknown)

    def _place(self, metadata: Iterable[CapabilityMetadata], now: int) -> None:
        """Add to the daemon's catalogue the capabilities nobody made known yet."""
        known = self._known()
        new = [m for m in metadata if m.id not in known and m.id not in self._static_caps]
        if new:
            self._know(new, now)

    def expect(self, now: int) -> None:
        """Put the expected domains' capabilities in the daemon's catalogue, once (call it after
        recovery: a journaled capability's real metadata is kept); ``catalogue`` does it too."""
        self._place_expected(now)

    def _place_expected(self, now: int) -> None:
        if self._placed:
            return
        self._placed = True
        for e in self._expected:
            self._place([e.metadata.get(c) or placeholder_metadata(e.manifest)[c] for c in e.manifest.capabilities], now)

    def announced(self, info: WorkerInfo, ready: Ready, now: int) -> None:
        """A worker registered (``WorkerPool.on_ready``): take the domains it announces.

        A manifest that is invalid is refused and logged; the worker stays registered (its
        capabilities serve plans all the same).
        """
        changed: dict[str, bytes] = {}
        for i, raw in enumerate(ready.domains):
            try:
                manifest = domain_from_data(raw, source=f"worker {info.worker_id} domains[{i}]")
            except ManifestError as exc:
                log.warning("domain_refused", worker_id=info.worker_id, index=i, problems=len(exc.problems), error=str(exc)[:500])
                continue
            declared = placeholder_metadata(manifest)
            self._place([declared[c] for c in manifest.capabilities if c not in info.capabilities], now)
            domain = manifest.domain
            self._origin[domain] = f"worker {info.worker_id}"
            if domain in self._watched:
                self._watched.discard(domain)
                log.info("intent_adapter_domain_announced", domain=domain, worker_id=info.worker_id)
            if self._manifests.get(domain) != manifest:
                log.info("domain_announced", domain=domain, worker_id=info.worker_id, goals=len(manifest.goals),
                         replaced=domain in self._manifests)
                self._manifests[domain] = manifest
                self.version += 1
                changed[domain] = _encoder.encode(manifest)
        if changed and self._record is not None:
            self._record(changed, now)

    def catalogue(self, now: int) -> Catalogue:
        """The catalogue of every domain whose capabilities are all known (rebuilt only when
        a domain or one of its capabilities changed).

        Args:
            now: the daemon's clock (journals the expected domains' capabilities, once).
        """
        self._place_expected(now)
        built, registry = self._built, self._known_version()
        if built is not None and built[0] == self.version and built[1] == registry:
            return built[3]
        caps = {**self._static_caps, **self._known()}
        if built is not None and built[0] == self.version and built[2] == caps:  # a worker came or went
            self._built = (self.version, registry, caps, built[3])
            return built[3]
        usable = []
        for domain, manifest in sorted(self._manifests.items()):
            problems = check_domain(manifest, caps)
            if problems:
                if (domain, self.version) not in self._skipped:  # said once per change, not per sentence
                    self._skipped.add((domain, self.version))
                    log.warning("domain_not_servable", domain=domain, problem=f"{problems[0].path}: {problems[0].message}")
                continue
            usable.append(manifest)
        catalogue = Catalogue(usable, caps)
        self._built = (self.version, registry, caps, catalogue)
        return catalogue

