"""Reading the domains a daemon is told to expect: domain folders and the bootstrap file.

The bootstrap file (``ontoflow daemon --domains-file FILE``, YAML, JSON or TOML) lists domain
ids and their manifests, paths relative to the file::

    domains:
      - domain: finance
        manifest: finance/domain.yaml
      - domain: weather          # served by an HTTP bridge worker: no handlers here
        manifest: weather.yaml

A manifest that names a ``handlers`` module has it imported for its capabilities' metadata
only (never run: the domain's workers run them); one that does not gets placeholder metadata
(``_domains.placeholder_metadata``: what its goals pass, and the reserved intent inputs an
HTTP domain's bridge takes) until its worker announces the real one.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from ontoflow.actors.capability import load_capabilities
from ontoflow.actors.intent import DomainLoadError, read_domain
from ontoflow.actors.orchestrator._domains import ExpectedDomain, placeholder_metadata
from ontoflow.protocols.documents import decode_document
from ontoflow.protocols.errors import ManifestError
from ontoflow.runtime.documents import document_format, read_document_bytes
from ontoflow.runtime.errors import CapabilityLoadError

__all__ = ["DomainsFile", "DomainsFileEntry", "expected_domain", "read_domains_file"]


class DomainsFileEntry(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One expected domain: its id and its manifest (a file or a folder, relative to the file)."""

    domain: str
    manifest: str


class DomainsFile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The bootstrap file: the domains a daemon expects before their workers connect."""

    domains: list[DomainsFileEntry]


def expected_domain(path: str | os.PathLike[str]) -> ExpectedDomain:
    """A domain folder (or manifest file) as an expected domain.

    Raises:
        DomainLoadError: the manifest does not load, or its handlers do not import.
    """
    source = read_domain(path)
    metadata = placeholder_metadata(source.manifest)
    if source.handlers:
        try:
            metadata.update({c.metadata.id: c.metadata for c in load_capabilities([source.handlers])})
        except CapabilityLoadError as exc:
            raise DomainLoadError(f"{source.path}: handlers: {exc}") from None
    return ExpectedDomain(manifest=source.manifest, metadata=metadata, source=str(source.path))


def read_domains_file(path: str | os.PathLike[str]) -> list[ExpectedDomain]:
    """The domains a bootstrap file lists.

    Raises:
        DomainLoadError: the file cannot be read or decoded, an entry is malformed, a domain is
            listed twice, a manifest does not load, or declares another domain id than its
            entry (each message names the file and the entry).
    """
    file = Path(path)
    try:
        data = read_document_bytes(file)
    except OSError as exc:
        raise DomainLoadError(f"{file}: cannot read the file: {exc.strerror}") from None
    try:
        listed = msgspec.convert(decode_document(data, document_format(file, data), source=str(file)), DomainsFile)
    except ManifestError as exc:
        raise DomainLoadError(str(exc)) from None
    except msgspec.ValidationError as exc:
        raise DomainLoadError(f"{file}: {exc}") from None
    found: list[ExpectedDomain] = []
    for i, entry in enumerate(listed.domains):
        where = f"{file}: domains[{i}] ({entry.domain})"
        if any(e.manifest.domain == entry.domain for e in found):
            raise DomainLoadError(f"{where}: the domain is listed twice")
        target = Path(entry.manifest)
        try:
            expected = expected_domain(target if target.is_absolute() else file.parent / target)
        except DomainLoadError as exc:
            raise DomainLoadError(f"{where}: {exc}") from None
        if expected.manifest.domain != entry.domain:
            raise DomainLoadError(f"{where}: its manifest declares the domain {expected.manifest.domain!r}")
        found.append(expected)
    return found
