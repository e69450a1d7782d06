"""``--input-file``: a JSON, YAML or TOML map of ontology key -> value."""

from __future__ import annotations

from pathlib import Path

import pytest

from ontoflow.runtime.errors import ConfigError
from ontoflow.runtime.cli._shared import read_input_file


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("in.json", '{"obdc.base.lang.code": "pt_BR", "t.limit": 3, "t.items": [1, 2]}'),
        ("in.yaml", "obdc.base.lang.code: pt_BR\nt.limit: 3\nt.items: [1, 2]\n"),
        ("in.yml", "obdc.base.lang.code: pt_BR\nt.limit: 3\nt.items: [1, 2]\n"),
        ("in.toml", '"obdc.base.lang.code" = "pt_BR"\n"t.limit" = 3\n"t.items" = [1, 2]\n'),
    ],
)
def test_a_map_in_each_format(tmp_path: Path, name: str, text: str) -> None:
    (tmp_path / name).write_text(text)
    assert read_input_file(tmp_path / name) == {"obdc.base.lang.code": "pt_BR", "t.limit": 3, "t.items": [1, 2]}


def test_not_a_map_is_refused(tmp_path: Path) -> None:
    (tmp_path / "in.json").write_text("[1, 2]")
    with pytest.raises(ConfigError, match=r"in\.json: expected a map"):
        read_input_file(tmp_path / "in.json")


def test_a_bad_key_is_named_but_never_its_value(tmp_path: Path) -> None:
    (tmp_path / "in.yaml").write_text("'not a key!': s3cret\n")
    with pytest.raises(ConfigError) as info:
        read_input_file(tmp_path / "in.yaml")
    assert "not a key!" in str(info.value) and "s3cret" not in str(info.value)


def test_a_syntax_error_names_the_file_line_and_column(tmp_path: Path) -> None:
    (tmp_path / "in.yaml").write_text("a.b: 1\nc.d: [1\n")
    with pytest.raises(ConfigError, match=r"--input-file .*in\.yaml: not valid YAML at line 3, column 1"):
        read_input_file(tmp_path / "in.yaml")


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--input-file .*nope\.json: cannot read the file"):
        read_input_file(tmp_path / "nope.json")
