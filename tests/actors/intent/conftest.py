"""The example domains as a catalogue, shared by the intent tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from ontoflow.actors.capability import load_capabilities
from ontoflow.actors.intent import Catalogue, Matcher, read_domain

REPO = Path(__file__).resolve().parents[3]
FINANCE = REPO / "configs" / "examples" / "finance"
BUILDING = REPO / "configs" / "examples" / "building_domain"


@pytest.fixture(scope="session")
def example_classes() -> list:
    """The handler classes of both example domains."""
    return load_capabilities([str(FINANCE / "handlers.py"), str(BUILDING / "handlers.py")])


@pytest.fixture(scope="session")
def catalogue(example_classes) -> Catalogue:
    """Finance and building, as shipped."""
    return Catalogue([read_domain(FINANCE).manifest, read_domain(BUILDING).manifest], {c.metadata.id: c.metadata for c in example_classes})


@pytest.fixture(scope="session")
def matcher(catalogue: Catalogue) -> Matcher:
    """The deterministic matcher over the example catalogue."""
    return Matcher(catalogue)
