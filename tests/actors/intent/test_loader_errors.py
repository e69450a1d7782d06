"""A syntax error in a domain manifest names the file, the line and the column, as one in a
workflow manifest does (it said only "invalid manifest: not valid YAML at line 2...")."""

from __future__ import annotations

from pathlib import Path

import pytest

from ontoflow.actors.intent import DomainLoadError
from ontoflow.actors.intent._loader import read_domain


def test_a_domain_manifest_syntax_error_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "domain.yaml").write_text("goals: [\n")
    with pytest.raises(DomainLoadError) as caught:
        read_domain(tmp_path)
    assert str(tmp_path / "domain.yaml") in str(caught.value) and "line 2, column 1" in str(caught.value)
