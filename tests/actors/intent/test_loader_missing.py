"""A domain path that does not exist is said so, not taken for a folder without a manifest.

Before: ``ontoflow ask --domains /no/such/dir`` said "no domain manifest (looked for
domain.yaml, ...)", sending a person to look for a file in a folder that is not there."""

from __future__ import annotations

from pathlib import Path

import pytest

from ontoflow.actors.intent import DomainLoadError
from ontoflow.actors.intent._loader import read_domain


def test_a_missing_path_is_said_missing(tmp_path: Path) -> None:
    with pytest.raises(DomainLoadError, match="no such folder or file"):
        read_domain(tmp_path / "nope")


def test_a_folder_without_a_manifest_still_says_what_it_looked_for(tmp_path: Path) -> None:
    with pytest.raises(DomainLoadError, match="looked for domain.yaml"):
        read_domain(tmp_path)
