"""Domains served from elsewhere: what a domain's capabilities look like before (or without)
their own metadata, and the manifest of a domain that is an HTTP service (seed 004).

Seed 004 adds a domain as a service with ``/health``, ``/manifest`` and ``/execute``. Its
``/manifest`` is a domain manifest whose ``capabilities`` may be plain ids or the seed's
capability metadata contract (``{"capability": ID, "metadata": {...}}``, or the metadata's
own fields with an ``id``); :func:`http_manifest` splits it into a :class:`DomainManifest` and
the capabilities' metadata.

A capability a domain names but whose metadata is not known yet (a domain the daemon was
told to expect, an HTTP domain that declares ids only) is described by
:func:`declared_metadata`: it takes the parameters its goals pass it, nothing else. The real
metadata a worker announces replaces it.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ontoflow.protocols.capability import CapabilityMetadata, check_metadata
from ontoflow.protocols.domain import DOMAIN_OUTPUT_KEY, DomainManifest, domain_from_data
from ontoflow.protocols.errors import ManifestError, Problem

__all__ = ["declared_metadata", "http_manifest"]


def declared_metadata(manifest: DomainManifest) -> dict[str, CapabilityMetadata]:
    """Minimal metadata for every capability ``manifest`` names: each takes the parameters
    (an entity's ``param``, else its name) of every goal that may resolve to it, and writes
    its ``DomainOutput`` (the only output a plan keeps from it).

    Args:
        manifest: a validated domain manifest.

    Returns:
        capability id -> metadata, for every id in ``manifest.capabilities``.
    """
    params: dict[str, dict[str, Any]] = {cap: {} for cap in manifest.capabilities}
    for goal in manifest.goals:
        targets = [goal.capability] if goal.capability else []
        for spec in goal.entities_schema.values():
            for target in spec.capability_map.values():
                targets.extend([target] if isinstance(target, str) else target)
        for cap in targets:
            for name, spec in goal.entities_schema.items():
                params.setdefault(cap, {})[spec.param or name] = {}
    return {
        cap: CapabilityMetadata(id=cap, description=f"a capability of the domain {manifest.domain}",
                                input_schema={"type": "object", "properties": props}, outputs=[DOMAIN_OUTPUT_KEY])
        for cap, props in params.items()
    }


def _capability_entry(i: int, entry: Any, problems: list[Problem]) -> CapabilityMetadata | str | None:
    where = f"capabilities[{i}]"
    if isinstance(entry, str):
        return entry
    if not isinstance(entry, dict):
        problems.append(Problem(path=where, message=f"expected a capability id or a map, got {type(entry).__name__}"))
        return None
    if "capability" in entry:  # seed 004's contract: {"capability": ID, "metadata": {...}}
        extra = sorted(set(entry) - {"capability", "metadata"})
        if extra:
            problems.append(Problem(path=where, message=f"unknown keys {extra}: expected 'capability' and 'metadata'"))
            return None
        data = {**(entry.get("metadata") or {}), "id": entry["capability"]}
    else:
        data = entry
    try:
        meta = msgspec.convert(data, CapabilityMetadata)
    except msgspec.ValidationError as exc:
        problems.append(Problem(path=where, message=str(exc)))
        return None
    problems.extend(check_metadata(meta))
    return meta


def http_manifest(data: Any, *, source: str = "") -> tuple[DomainManifest, dict[str, CapabilityMetadata]]:
    """Validate what a domain service's ``/manifest`` answered.

    Args:
        data: the decoded JSON body.
        source: where it came from (the URL), for error messages.

    Returns:
        The domain manifest and the metadata of each of its capabilities (declared ones
        from :func:`declared_metadata` for those given as plain ids).

    Raises:
        ManifestError: listing every problem with its path.
    """
    if not isinstance(data, dict):
        raise ManifestError(Problem(path="", message=f"expected a map at the top level, got {type(data).__name__}"), source=source)
    entries = data.get("capabilities", [])
    if not isinstance(entries, list):
        raise ManifestError(Problem(path="capabilities", message="expected a list"), source=source)
    problems: list[Problem] = []
    parsed = [_capability_entry(i, e, problems) for i, e in enumerate(entries)]
    if problems:
        raise ManifestError(problems, source=source)
    ids = [p if isinstance(p, str) else p.id for p in parsed if p is not None]
    manifest = domain_from_data({**data, "capabilities": ids}, source=source)
    metadata = declared_metadata(manifest)
    metadata.update({p.id: p for p in parsed if isinstance(p, CapabilityMetadata)})
    return manifest, metadata
