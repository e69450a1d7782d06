"""What a worker announces of the domains it serves (``ontoflow worker --domain DIR``).

A domain folder holds its manifest and its handlers (seed 004): the worker hosts the handlers
as ordinary capabilities and announces the manifest in its ``Ready`` (``Ready.domains``), so the
daemon answers sentences for the domain from then on. Nothing in the core names the domain.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ontoflow.actors.capability import Capability, load_capabilities
from ontoflow.actors.intent import DomainLoadError, read_domain
from ontoflow.protocols.domain import DomainManifest
from ontoflow.runtime.errors import CapabilityLoadError

__all__ = ["DomainAnnouncement", "announced", "read_domain_folders"]


@dataclass(frozen=True, slots=True)
class DomainAnnouncement:
    """The domains one worker serves: their handler classes and their manifests as announced,
    and what the worker host repeats for them at an interval (a bridged service's ``/health``
    check: ``host.timers.every``)."""

    capabilities: list[type[Capability]]
    domains: list[dict[str, Any]]
    checks: list[Callable[[], Awaitable[Any]]] = field(default_factory=list)


def announced(manifest: DomainManifest) -> dict[str, Any]:
    """``manifest`` as ``Ready.domains`` carries it (a plain map, without the local ``handlers`` path)."""
    data = msgspec.to_builtins(manifest)
    data.pop("handlers", None)
    return data


def read_domain_folders(folders: Iterable[str | os.PathLike[str]]) -> DomainAnnouncement:
    """Read domain folders: their handlers (imported) and their manifests.

    Raises:
        DomainLoadError: a folder without a valid manifest, a domain given twice, or handlers
            that do not import (the message names the folder).
    """
    classes: list[type[Capability]] = []
    domains: list[dict[str, Any]] = []
    seen: set[str] = set()
    for folder in folders:
        source = read_domain(folder)
        if source.manifest.domain in seen:
            raise DomainLoadError(f"{source.path}: the domain {source.manifest.domain!r} is given twice")
        seen.add(source.manifest.domain)
        if source.handlers:
            try:
                classes.extend(c for c in load_capabilities([source.handlers]) if c not in classes)
            except CapabilityLoadError as exc:
                raise DomainLoadError(f"{source.path}: handlers: {exc}") from None
        domains.append(announced(source.manifest))
    return DomainAnnouncement(capabilities=classes, domains=domains)
