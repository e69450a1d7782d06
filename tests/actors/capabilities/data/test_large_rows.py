"""Rows of large BLOBs: the extractor fetches fewer at a time, so a batch stays near
``BATCH_BYTES`` in memory, and a spool frame never outgrows its 4-byte length (real SQLite)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ontoflow.actors.capabilities.data import DatasetSpool, SqliteExtractor, read_batches
from ontoflow.actors.capabilities.data import _dataset
from ontoflow.actors.errors import PermanentError
from ontoflow.protocols import Invoke, StepContext, SystemMetadata


@pytest.mark.anyio
async def test_large_rows_are_fetched_fewer_at_a_time(tmp_path: Path) -> None:
    db = tmp_path / "blobs.db"
    con = sqlite3.connect(db)
    with con:
        con.execute("CREATE TABLE t (id INTEGER, b BLOB)")
        con.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 8) "
                    "INSERT INTO t SELECT i, zeroblob(10 * 1024 * 1024) FROM n")
    con.close()
    inputs = {"data.query": "SELECT * FROM t ORDER BY id", "data.database": str(db), "data.batch_rows": 4,
              "data.work_dir": str(tmp_path / "work")}
    ctx = StepContext(system=SystemMetadata(run_id="r1", step_id="s1"))
    out = await SqliteExtractor().invoke(
        Invoke(run_id="r1", step_id="s1", attempt=1, capability="sqlite.extractor", inputs=inputs, context=ctx))
    assert out.event == "success", out.error
    sizes = [len(batch) for batch in read_batches(Path(out.outputs["data.dataset"]["path"]))]
    # 4 rows of 10 MiB are 40 MiB: past BATCH_BYTES (32 MiB), the next fetches take 3 rows, then what is left.
    assert sizes == [4, 3, 1]


def test_a_batch_past_the_frame_limit_is_split_and_one_row_past_it_refused(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(_dataset, "MAX_FRAME_BYTES", 1000)
    with DatasetSpool(tmp_path / "s.rows", ["b"]) as spool:
        spool.write([[b"x" * 300] for _ in range(10)])
    assert [len(b) for b in read_batches(tmp_path / "s.rows")] == [2, 3, 2, 3]
    with pytest.raises(PermanentError, match="a row is larger than"), DatasetSpool(tmp_path / "t.rows", ["b"]) as spool:
        spool.write([[b"x" * 2000]])
    assert not (tmp_path / "t.rows").exists()
