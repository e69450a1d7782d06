"""A connections file that does not parse is named with its line and column, never a value."""

from __future__ import annotations

from pathlib import Path

import pytest

from ontoflow.actors.pipelines import ConnectionResolutionError, load_connections


@pytest.mark.parametrize(("name", "text", "where"), [
    ("conns.yaml", 'shop:\n  password: "hunter2-secret\n  database: [\n', "line 4, column 1"),  # the quote never ends
    ("conns.toml", '[connections]\nshop = { password = "hunter2-secret" \n', "line 2, column"),
    ("conns.json", '{"shop": {"password": "hunter2-secret"},}', "line 1, column"),
])
def test_a_syntax_error_names_the_file_the_line_and_the_column_and_no_value(tmp_path: Path, name: str, text: str,
                                                                           where: str) -> None:
    file = tmp_path / name
    file.write_text(text)
    file.chmod(0o600)
    with pytest.raises(ConnectionResolutionError) as caught:
        load_connections(file)
    message = str(caught.value)
    assert str(file) in message and where in message, message
    assert "hunter2" not in message
