"""``sqlite.extractor``: run a query on a SQLite database file and spool its rows (read mode)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import quote

import anyio
import anyio.from_thread

from ontoflow.actors.capabilities.data._dataset import DatasetSpool, spool_path
from ontoflow.actors.capabilities.data._keys import BATCH_ROWS, COMMON_INPUTS, CONNECTION, DATABASE, DATASET, QUERY, ROWS, WORK_DIR
from ontoflow.actors.capability import Capability, PermanentError, Result
from ontoflow.protocols import CapabilityMetadata, RetryPolicy, StepContext

__all__ = ["SqliteExtractor"]


def _database(inputs: dict[str, Any]) -> Path:
    """The database file from ``data.database`` or the resolved ``data.connection``.

    A connection is a path, a ``sqlite:///path`` URL, or a map with ``database`` or ``path``.
    """
    source = inputs.get(DATABASE)
    if source is None:
        conn = inputs.get(CONNECTION)
        if isinstance(conn, dict):
            source = conn.get("database") or conn.get("path")
        elif isinstance(conn, str):
            if conn.startswith("@"):
                raise PermanentError(f"{CONNECTION} {conn[:40]!r} was not resolved: run the pipeline with its connections")
            source = conn.removeprefix("sqlite:///").removeprefix("sqlite://")
    if not isinstance(source, str) or not source:
        raise PermanentError(f"give the database file as {DATABASE} or through {CONNECTION}")
    path = Path(source).expanduser()
    if not path.is_file():
        raise PermanentError(f"the database file given by {DATABASE}/{CONNECTION} does not exist")
    return path


class SqliteExtractor(Capability):
    """Query a SQLite database file, read-only, and spool the rows in batches.

    Inputs: ``data.query`` (SQL), the file as ``data.database`` or ``data.connection``,
    ``data.batch_rows``, ``data.work_dir``. Outputs: ``data.dataset`` (a dataset reference)
    and ``data.rows``. Events: ``success``, ``empty`` (the query returned no row).
    """

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="sqlite.extractor",
        description="Run a query on a SQLite database file (read-only) and stream its rows.",
        events=["success", "empty", "failure"],
        input_schema={
            "type": "object",
            "properties": {
                QUERY: {"type": "string", "minLength": 1},
                DATABASE: {"type": "string", "minLength": 1},
                CONNECTION: {"type": ["string", "object"]},
                **COMMON_INPUTS,
            },
            "required": [QUERY],
        },
        outputs=[DATASET, ROWS],
        retry=RetryPolicy(max_retries=2),
        timeout_ms=600_000,
        idempotent=True,
        flow={"modes": ["read"]},
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Any:
        path = _database(inputs)
        target = spool_path(inputs.get(WORK_DIR), context)
        ref = await anyio.to_thread.run_sync(_extract, path, inputs[QUERY], int(inputs[BATCH_ROWS]), target)
        outputs = {DATASET: ref, ROWS: ref["rows"]}

        return Result(event="success" if ref["rows"] else "empty", outputs=outputs)


def _extract(path: Path, query: str, batch_rows: int, target: Path) -> dict[str, Any]:
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    try:
        db = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise PermanentError(f"cannot open the database: {type(exc).__name__}") from None
    try:
        try:
            cursor = db.execute(query)
        except sqlite3.Error as exc:
            raise PermanentError(f"the query failed: {exc}") from None
        columns = [d[0] for d in cursor.description or ()]
        with DatasetSpool(target, columns) as spool:
            while True:
                batch = cursor.fetchmany(batch_rows)
                if not batch:
                    break
                spool.write(batch)
                anyio.from_thread.check_cancelled()
        return spool.ref
    finally:
        db.close()
