"""The public face ``ontoflow``: what a capability author imports, and nothing of it missing."""

from __future__ import annotations

import types

import ontoflow
from ontoflow.actors.capability import Capability
from ontoflow.protocols import CapabilityMetadata


def test_the_face_hands_a_capability_author_what_they_need() -> None:
    assert ontoflow.Capability is Capability
    assert ontoflow.CapabilityMetadata is CapabilityMetadata
    for name in ("Result", "TransientError", "PermanentError", "RunResult", "run_manifest", "arun_manifest"):
        assert hasattr(ontoflow, name), name


def test_all_is_sorted_and_complete() -> None:
    public = {n for n, v in vars(ontoflow).items()
              if not n.startswith("_") and n != "annotations" and not isinstance(v, types.ModuleType)}
    assert set(ontoflow.__all__) - {"__version__"} == public
    isort = lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n)  # noqa: E731
    assert ontoflow.__all__ == sorted(ontoflow.__all__, key=isort)


def test_the_version_is_the_installed_distributions() -> None:
    from importlib.metadata import version

    assert ontoflow.__version__ == version("ontoflow")
