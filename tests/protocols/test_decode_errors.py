"""A document's syntax error names the file, the line and the column (counted from 1)."""

from __future__ import annotations

import pytest

from ontoflow.protocols.errors import ManifestError
from ontoflow.protocols.manifest import decode_document


@pytest.mark.parametrize(
    ("fmt", "data", "where"),
    [
        ("yaml", b"start: main\nnodes: [a, b\nother: 1\n", "line 3, column 6"),
        ("yaml", b"start: main\nnodes:\n  main: x: y\n", "line 3, column 10"),
        ("json", b'{"start": "main",\n "nodes": }', "line 2, column 11"),
        ("json", b'{"start":\n "main"', "line 2, column 8"),
        ("toml", b'start = "main"\nnodes = = 1\n', "line 2, column 9"),
    ],
)
def test_a_syntax_error_names_the_file_line_and_column(fmt: str, data: bytes, where: str) -> None:
    with pytest.raises(ManifestError) as info:
        decode_document(data, fmt, source=f"flows/m.{fmt}")
    text = str(info.value)
    assert f"flows/m.{fmt}" in text and f"not valid {fmt.upper()} at {where}" in text


def test_without_a_source_the_message_still_has_the_position() -> None:
    with pytest.raises(ManifestError, match=r"not valid YAML at line 1, column 5"):
        decode_document(b"a: b: c\n", "yaml")
