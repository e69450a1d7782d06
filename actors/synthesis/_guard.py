"""VALIDATE_OML: everything a pipeline must pass before COMPILE, each problem with its path.

Two checks, in order, the first that finds problems answers:

1. the OML v0.1.0 schema guard (``protocols.oml.check_oml``), told which components exist
   (the built-in capabilities that declare ``flow.modes``, the list the contract block gives a
   model): a component that is not one (``mysql.extractor``, or a capability that is no
   component) is a guard error, not a compile failure later;
2. what COMPILE would refuse (a mode the component does not work in, a config key it does not
   take): found here so that the one guided regeneration can fix it, never after it.

Messages name paths, never a value the pipeline holds.
"""

from __future__ import annotations

from typing import Any

from ontoflow.actors.synthesis._deterministic import SynthesisRequest
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.errors import ManifestError, Problem
from ontoflow.protocols.oml import check_oml, pipeline_from_data

__all__ = ["component_catalog", "component_ids", "guard_pipeline"]


def component_catalog() -> dict[str, CapabilityMetadata]:
    """Capability id -> metadata of the built-in capabilities (what a pipeline runs on)."""
    from ontoflow.actors.capabilities import CAPABILITIES

    return {cls.metadata.id: cls.metadata for cls in CAPABILITIES}


def component_ids(catalog: dict[str, CapabilityMetadata]) -> list[str]:
    """The capabilities that are pipeline components (they declare ``flow.modes``), sorted."""
    return sorted(cid for cid, meta in catalog.items() if meta.flow.get("modes"))


def guard_pipeline(document: Any, request: SynthesisRequest | None = None) -> list[Problem]:
    """Every problem of ``document`` as the pipeline for ``request`` (empty when it may compile).

    Args:
        document: the decoded pipeline (whatever a synthesiser wrote).
        request: what was asked (not used yet).

    Returns:
        The problems of the first check that found any, each with its path.
    """
    catalog = component_catalog()
    problems = check_oml(document, components=component_ids(catalog))
    if problems:
        return problems
    from ontoflow.actors.pipelines import compile_pipeline

    try:
        compile_pipeline(pipeline_from_data(document, source="synthesised pipeline"), catalog)
    except ManifestError as exc:
        return list(exc.problems)
    return []
