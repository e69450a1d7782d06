"""Where ``ask``, ``chat`` and ``intents eval`` find their domains, and loading them.

Every ``--domains DIR`` (a folder with a ``domain.yaml`` and its handlers); without one, the
folders listed in ``$ONTOFLOW_DOMAINS`` (separated by ``os.pathsep``), else every domain
folder under ``./configs/examples`` (so it works from a fresh clone's root).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from ontoflow.actors.capability import load_capabilities
from ontoflow.actors.intent import Catalogue, DomainLoadError, find_domain_folders, read_domain

__all__ = ["DOMAINS_ENV", "EXAMPLES", "domain_paths", "load_catalogue"]

DOMAINS_ENV = "ONTOFLOW_DOMAINS"
EXAMPLES = Path("configs") / "examples"


def domain_paths(args: argparse.Namespace) -> list[Path]:
    """The domain folders to load (see the module docstring for the order of sources)."""
    if args.domains:
        return [Path(d) for d in args.domains]
    env = os.environ.get(DOMAINS_ENV, "")
    if env.strip():
        return [Path(p) for p in env.split(os.pathsep) if p.strip()]
    return find_domain_folders(EXAMPLES)


def load_catalogue(paths: list[Path]) -> tuple[Catalogue, list[Any], list[str]]:
    """Read the domains and load their handlers: ``(catalogue, capability classes, specs)``.

    Raises:
        DomainLoadError: no domain found, or one that does not load.
        CapabilityLoadError: handlers that do not import.
        ManifestError: a domain naming a capability its handlers do not provide.
    """
    if not paths:
        raise DomainLoadError(f"no domains: give --domains DIR, set ${DOMAINS_ENV}, or run where {EXAMPLES} holds domain folders")
    sources = [read_domain(p) for p in paths]
    specs = [s.handlers for s in sources if s.handlers]
    classes = load_capabilities(specs) if specs else []
    catalogue = Catalogue([s.manifest for s in sources], {c.metadata.id: c.metadata for c in classes})
    return catalogue, classes, specs
