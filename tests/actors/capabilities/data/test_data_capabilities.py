"""The data capabilities on their own: streaming extraction, transform, writers, the filter language."""

from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path

import pytest

from ontoflow.protocols import Invoke, StepContext, SystemMetadata

from ontoflow.actors.capabilities.data import (
    CsvWriter,
    ExpressionError,
    JsonlWriter,
    SqliteExtractor,
    TableTransform,
    compile_filter,
    read_batches,
)


def _db(path: Path, rows: int) -> Path:
    db = sqlite3.connect(path)
    with db:
        db.execute("CREATE TABLE t (id INTEGER, name TEXT, score REAL)")
        db.executemany("INSERT INTO t VALUES (?, ?, ?)", [(i, f"n{i}", i / 2) for i in range(rows)])
    db.close()
    return path


async def _invoke(capability, inputs: dict, step: str = "s1"):
    ctx = StepContext(system=SystemMetadata(run_id="run1", step_id=step))
    return await capability.invoke(Invoke(run_id="run1", step_id=step, attempt=1, capability=capability.metadata.id, inputs=inputs, context=ctx))


@pytest.mark.anyio
async def test_extract_streams_in_batches_then_transform_and_write(tmp_path: Path) -> None:
    db = _db(tmp_path / "d.db", 25)
    work = str(tmp_path / "work")
    out = await _invoke(SqliteExtractor(), {"data.query": "SELECT * FROM t ORDER BY id", "data.connection": {"database": str(db)}, "data.batch_rows": 10, "data.work_dir": work})
    assert out.event == "success", out.error
    ref = out.outputs["data.dataset"]
    assert ref["rows"] == 25 and ref["columns"] == ["id", "name", "score"]
    assert [len(b) for b in read_batches(Path(ref["path"]))] == [10, 10, 5]
    t = await _invoke(TableTransform(), {"data.dataset": ref, "data.filter": "score >= 10 and not name == 'n21'", "data.select": ["name", "id"], "data.rename": {"name": "who"}, "data.work_dir": work}, "s2")
    assert t.event == "success", t.error
    target = tmp_path / "o" / "x.csv"
    w = await _invoke(CsvWriter(), {"data.dataset": t.outputs["data.dataset"], "data.path": str(target), "data.delimiter": ";"}, "s3")
    assert w.outputs == {"data.file": str(target), "data.rows": 4}
    rows = list(csv.reader(target.read_text().splitlines(), delimiter=";"))
    assert rows == [["who", "id"], ["n20", "20"], ["n22", "22"], ["n23", "23"], ["n24", "24"]]
    j = await _invoke(JsonlWriter(), {"data.dataset": t.outputs["data.dataset"], "data.path": str(tmp_path / "x.jsonl")}, "s4")
    assert [json.loads(line) for line in (tmp_path / "x.jsonl").read_text().splitlines()][0] == {"who": "n20", "id": 20}
    assert j.outputs["data.rows"] == 4


@pytest.mark.anyio
async def test_empty_result_and_errors(tmp_path: Path) -> None:
    db = _db(tmp_path / "d.db", 3)
    empty = await _invoke(SqliteExtractor(), {"data.query": "SELECT * FROM t WHERE id > 9", "data.database": str(db), "data.work_dir": str(tmp_path)})
    assert empty.event == "empty"
    missing = await _invoke(SqliteExtractor(), {"data.query": "SELECT 1", "data.database": str(tmp_path / "none.db")})
    assert missing.event == "failure" and "does not exist" in missing.error
    unresolved = await _invoke(SqliteExtractor(), {"data.query": "SELECT 1", "data.connection": "@default"})
    assert "not resolved" in unresolved.error
    bad = await _invoke(TableTransform(), {"data.dataset": empty.outputs["data.dataset"], "data.filter": "id >"})
    assert bad.event == "failure" and "data.filter" in bad.error
    not_ref = await _invoke(CsvWriter(), {"data.dataset": {"path": "/etc/passwd"}, "data.path": str(tmp_path / "y.csv")})
    assert not_ref.event == "failure" and not (tmp_path / "y.csv").exists()


def test_filter_language() -> None:
    cols = ["a", "b", "c d"]
    f = compile_filter("(a > 1 or b == 'x') and `c d` != null", cols)
    assert f([2, "y", 1]) and f([0, "x", 1]) and not f([0, "y", 1]) and not f([2, "y", None])
    assert not compile_filter("a < 'text'", cols)([1, 0, 0])  # mixed kinds never raise
    assert compile_filter("b", cols)([0, "non-empty", 0])
    for bad, where in [("", "empty"), ("a >", "position"), ("zz == 1", "unknown column 'zz'"), ("a == 1 b", "position"), ("(a", "expected")]:
        with pytest.raises(ExpressionError, match=where):
            compile_filter(bad, cols)


@pytest.mark.parametrize(("text", "said"), [
    ("(" * 100_000 + "a" + ")" * 100_000, "nests deeper than 64 at position 64"),
    ("not " * 100_000 + "a", "nests deeper than 64 at position 256"),
    ("a == " + "1" * 5000, "longer than 4000 digits at position 5"),
    ("`" + "x" * 100_000 + "` == 1", "unknown column of 100000 characters at position 0"),
])
def test_a_hostile_filter_is_an_expression_error(text: str, said: str) -> None:
    with pytest.raises(ExpressionError, match=said):
        compile_filter(text, ["a"])


def test_a_long_chain_of_terms_tests_a_row_without_deep_recursion() -> None:
    chain = compile_filter(" and ".join(["a > 0"] * 20_000), ["a"])
    assert chain([1]) and not chain([0])
    either = compile_filter(" or ".join(["a == 1"] * 20_000 + ["a == 2"]), ["a"])
    assert either([2]) and not either([3])
    assert compile_filter("(a > 0 and not a == 5) or (a == 0)", ["a"])([0])
