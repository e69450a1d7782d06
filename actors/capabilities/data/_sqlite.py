"""``sqlite.extractor``: run a query on a SQLite database file and spool its rows (read mode).

Read mode means the query reads and nothing else. Opening the file read-only (``mode=ro``) is
not enough: ``VACUUM INTO '/any/file'`` and ``ATTACH '/any/file' AS x`` still create files
(a query is a pipeline's setting, and a model may write it). So the connection also runs with
an authorizer that refuses ``ATTACH``/``DETACH`` (``VACUUM INTO`` asks for an attach first) and
every ``PRAGMA`` but the read-only ones a query may call as functions (``pragma_table_info``),
with ``query_only`` on and ``trusted_schema`` off (a hostile database's views and triggers
call no function with side effects). A query that runs until cancelled is interrupted by
SQLite's progress handler when its step is cancelled (a timeout), not left burning a thread.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import quote

import anyio
import anyio.from_thread

from ontoflow.actors.capabilities.data._dataset import BATCH_BYTES, DatasetSpool, spool_path
from ontoflow.actors.capabilities.data._roots import check_inside_roots
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
    check_inside_roots(path, f"{DATABASE}/{CONNECTION}")
    if not path.is_file():  # a FIFO or a device is refused here: SQLite's open of a FIFO waits for a writer
        what = "is not a regular file (a folder, a pipe or a device)" if path.exists() else "does not exist"
        raise PermanentError(f"the database file given by {DATABASE}/{CONNECTION} {what}")
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


#: The pragmas a query may use (as table-valued functions): they only read the schema.
_READ_PRAGMAS = frozenset({
    "table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo", "foreign_key_list",
    "collation_list", "database_list", "function_list", "module_list", "pragma_list",
    # Numbers about the file; setting one fails on the read-only file anyway.
    "user_version", "application_id", "schema_version", "data_version", "page_count", "page_size", "freelist_count",
    "encoding",
})
_DENIED = frozenset({sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH})
_SQLITE_AUTH = 23  # the authorizer refused (an ATTACH says so by this code, a PRAGMA by its text)
# The opcodes between two calls of the progress handler (a cancellation check is cheap).
_PROGRESS_OPS = 100_000


# SQLite quotes the text it could not read (``unrecognized token: "'password=..."``): a
# literal of the query, a setting's value, goes no further than this step (an error reaches
# the trace and the journal). A name it misses (``no such table: t``) is kept.
_QUOTED = re.compile(r"[\"'].*[\"']|[\"'].*$", re.DOTALL)


def _failed(exc: sqlite3.Error) -> PermanentError:
    return PermanentError(f"the query failed: {_QUOTED.sub('(quoted text)', str(exc))[:200]}")


def _authorize(action: int, arg1: str | None, _arg2: str | None, _db: str | None, _trigger: str | None) -> int:
    if action in _DENIED:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").casefold() not in _READ_PRAGMAS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def _cancelled() -> int:
    """SQLite's progress handler: non-zero interrupts the query once the step is cancelled."""
    try:
        anyio.from_thread.check_cancelled()
    except RuntimeError:  # not in an anyio worker thread (a direct call): nothing cancels it
        return 0
    except BaseException:  # the step's cancellation: interrupt, the caller sees the cancel
        return 1
    return 0


def _open_read_only(path: Path) -> sqlite3.Connection:
    """The database at ``path`` opened for reading only (see the module docstring)."""
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    db = sqlite3.connect(uri, uri=True)
    try:
        db.execute("PRAGMA trusted_schema = OFF")
        db.execute("PRAGMA query_only = ON")
        db.set_authorizer(_authorize)
        db.set_progress_handler(_cancelled, _PROGRESS_OPS)
    except BaseException:
        db.close()
        raise
    return db


def _extract(path: Path, query: str, batch_rows: int, target: Path) -> dict[str, Any]:
    try:
        db = _open_read_only(path)
    except sqlite3.Error as exc:
        raise PermanentError(f"cannot open the database: {type(exc).__name__}") from None
    try:
        try:
            cursor = db.execute(query)
        except sqlite3.DatabaseError as exc:
            if getattr(exc, "sqlite_errorcode", None) == _SQLITE_AUTH or "not authorized" in str(exc):
                raise PermanentError(f"{QUERY} may only read: ATTACH, DETACH, VACUUM INTO and PRAGMA (but the "
                                     "read-only ones, as pragma_table_info) are refused") from None
            raise _failed(exc) from None
        except sqlite3.Error as exc:
            raise _failed(exc) from None
        columns = [d[0] for d in cursor.description or ()]
        size = batch_rows
        with DatasetSpool(target, columns) as spool:
            while True:
                try:  # a row may fail too (an overflow, malformed JSON, a corrupt page)
                    batch = cursor.fetchmany(size)
                except sqlite3.Error as exc:
                    raise _failed(exc) from None
                if not batch:
                    break
                written = spool.write(batch)
                # Rows of large BLOBs: fewer at a time, so a batch in memory stays near BATCH_BYTES.
                size = max(1, min(batch_rows, BATCH_BYTES * len(batch) // max(written, 1)))
                anyio.from_thread.check_cancelled()
        return spool.ref
    finally:
        db.close()
