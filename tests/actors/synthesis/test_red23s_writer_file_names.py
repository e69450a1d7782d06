"""A writer writes a file of the requested format, named so: its ``path`` must end in that
format's suffix and name no hidden file. Before, any file inside the working folder passed the
guard, so a model steered by a database's table names (they are in its prompt) could write a
table's rows over ``./.bashrc`` of a worker started in a home folder, or over the worker's own
``connections.yaml``; the rows are the database's, a shell would run them."""

from __future__ import annotations

from typing import Any

import pytest

from ontoflow.actors.synthesis import SynthesisRequest
from ontoflow.actors.synthesis._guard import guard_pipeline


def _pipeline(component: str, path: str) -> dict[str, Any]:
    return {"oml_version": "0.1.0", "name": "shop", "steps": [
        {"id": "extract", "component": "sqlite.extractor", "mode": "read",
         "config": {"query": "SELECT * FROM users", "database": "./shop.db"}},
        {"id": "write", "component": component, "mode": "write", "needs": ["extract"], "config": {"path": path}}]}


@pytest.mark.parametrize(("fmt", "component", "path"), [
    ("csv", "csv.writer", "./.bashrc"),
    ("csv", "csv.writer", "./connections.yaml"),
    ("csv", "csv.writer", "./out/.hidden.csv"),
    ("csv", "csv.writer", "./out/users"),
    ("jsonl", "jsonl.writer", "./out/users.csv"),
])
def test_a_writer_path_that_is_no_file_of_the_requested_format_is_refused(fmt: str, component: str, path: str) -> None:
    problems = guard_pipeline(_pipeline(component, path), SynthesisRequest(source="./shop.db", format=fmt))
    assert [p.path for p in problems] == ["steps[1].config.path"]
    assert path.rsplit("/", 1)[-1] not in problems[0].message


@pytest.mark.parametrize(("fmt", "component", "path"), [
    ("csv", "csv.writer", "./out/users.csv"), ("csv", "csv.writer", "./out/Users.CSV"),
    ("jsonl", "jsonl.writer", "./out/users.jsonl"), ("csv", "csv.writer", "users.csv"),
])
def test_a_file_of_the_requested_format_passes(fmt: str, component: str, path: str) -> None:
    assert guard_pipeline(_pipeline(component, path), SynthesisRequest(source="./shop.db", format=fmt)) == []
