"""``ontoflow replay``'s errors: with ``--json`` each is one JSON object on stderr, as every
other verb's (they were ``ontoflow replay: ...`` text lines whatever was asked), with the same
exit code as in text mode, and never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def _replay(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ontoflow", "replay", *argv], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60)


@pytest.mark.parametrize(
    ("argv", "code", "says"),
    [
        (["--journal", "j.sqlite", "--all"], 3, "not a readable SQLite database"),
        (["--journal", "missing.sqlite", "--all"], 3, "does not exist"),
        (["--journal", "j.sqlite"], 2, "name one RUN, or --all"),
    ],
)
def test_json_errors_are_one_json_object(tmp_path: Path, argv: list[str], code: int, says: str) -> None:
    (tmp_path / "j.sqlite").write_text("not a database\n")
    done = _replay(tmp_path, *argv, "--json")
    assert done.returncode == code and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    error = json.loads(lines[0])["error"]
    assert says in error["message"] and error["code"] in ("journal", "invalid")


def test_text_errors_are_lines_naming_the_verb(tmp_path: Path) -> None:
    (tmp_path / "j.sqlite").write_text("not a database\n")
    done = _replay(tmp_path, "--journal", "j.sqlite", "--all")
    assert done.returncode == 3
    assert done.stderr.startswith("ontoflow: replay: journal j.sqlite is not a readable SQLite database")
