"""What a worker announces: the domains it serves (``ontoflow worker --domain DIR``), and what
it says when its announcement is never answered.

A worker's first ``Ready`` leaves before it knows the daemon's ``--max-message-bytes`` (the
``Welcome`` says it): a daemon whose limit is below the Ready's size has libzmq drop the
connection without a word, and the worker would retry for ever, logging only that the daemon
is unreachable. So after :data:`NOT_WELCOMED_AFTER` sessions in a row without a Welcome, the
worker logs ``worker_not_welcomed`` once (an error) with its Ready's size and what to compare
it with (:func:`not_welcomed`); it goes on retrying (a daemon that is merely down comes back).

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
import structlog

from ontoflow.actors.capability import Capability, load_capabilities
from ontoflow.actors.intent import DomainLoadError, read_domain
from ontoflow.protocols.domain import DomainManifest
from ontoflow.protocols.messages import Ready
from ontoflow.runtime.codec import encode
from ontoflow.runtime.errors import CapabilityLoadError

__all__ = ["NOT_WELCOMED_AFTER", "DomainAnnouncement", "announced", "not_welcomed", "read_domain_folders",
           "say_not_welcomed"]

log = structlog.get_logger()

#: Sessions in a row without a Welcome after which the worker says why that may be.
NOT_WELCOMED_AFTER = 2


def not_welcomed(ready: Ready, address: str, sessions: int = NOT_WELCOMED_AFTER) -> dict[str, Any]:
    """The fields of the ``worker_not_welcomed`` log line: the Ready's encoded size and the hint
    (names and sizes only: a capability's metadata is not shown)."""
    size = len(encode(ready))
    return {"address": address, "sessions": sessions, "ready_bytes": size, "capabilities": len(ready.capabilities),
            "hint": f"no Welcome after {sessions} Readys of {size:,} bytes: is the daemon up at {address}? A daemon "
                    f"whose --max-message-bytes is below {size:,} drops this worker's connection without a word: "
                    "raise it, or host fewer capabilities or domains on this worker"}


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


def say_not_welcomed(unwelcomed: int, ready: Callable[[], Ready], address: str, worker_id: str) -> None:
    """Log ``worker_not_welcomed`` (an error) when ``unwelcomed`` sessions in a row, exactly
    :data:`NOT_WELCOMED_AFTER`, ended without a Welcome: once a streak, not at every retry."""
    if unwelcomed == NOT_WELCOMED_AFTER:
        log.error("worker_not_welcomed", worker_id=worker_id, **not_welcomed(ready(), address, unwelcomed))
