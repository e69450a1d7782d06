"""A journal row that cannot be read: named by its run and its row, as a ``JournalCorruptError``.

SQLite stores what it is given in any column: a row written by hand, by a tool, or damaged on
disk may hold text that is not UTF-8 (``sqlite3`` then raises an ``OperationalError`` quoting
the bytes) or a value of another type (a fact's body as text, a time as text), which a reader
took as it was and failed on far from here. Every row a reader returns is checked for the
types its columns promise (a few ``type`` calls a row); a row that fails is refused with the
journal, the run, the table and the row (``seq`` of a fact, ``rowid`` of a run), naming the
column, never its value.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar, get_args

from ontoflow.protocols.types import RunStatusName
from ontoflow.runtime.journal.errors import JournalCorruptError

__all__ = ["absent_table", "bad_group", "check_fact_row", "check_run_row", "damage_named", "named_damage"]

_T = TypeVar("_T")
_NONE = type(None)
#: The type(s) of each column of ``_schema.RUN_COLUMNS``, in order.
_RUN_TYPES: tuple[tuple[str, tuple[type, ...]], ...] = (
    ("run_id", (str,)), ("source_hash", (str,)), ("status", (str,)), ("submitted_ms", (int,)),
    ("ended_ms", (int, _NONE)), ("deadline_at_ms", (int, _NONE)), ("idempotency_key", (str, _NONE)),
    ("trigger_key", (str, _NONE)), ("name", (str,)), ("owner", (str, _NONE)))
#: The same for a fact row ``(run_id, kind, at_ms, body)``.
_FACT_TYPES: tuple[tuple[str, tuple[type, ...]], ...] = (
    ("run_id", (str,)), ("kind", (str,)), ("at_ms", (int,)), ("body", (bytes,)))
#: The statuses a run row may hold. Another (a row edited by hand: ``Running``, ``done``) went
#: out in a ``RunList`` no client decodes: every ``ontoflow runs`` timed out, the daemon silent.
_STATUSES = frozenset(get_args(RunStatusName))
_UNDECODABLE = re.compile(r"Could not decode to UTF-8 column '(\w+)'")
_MAX_RUN_ID_SHOWN = 128


def _wrong_column(row: Sequence[object], types: tuple[tuple[str, tuple[type, ...]], ...]) -> str | None:
    for value, (column, allowed) in zip(row, types):
        if type(value) not in allowed:  # exact types: a bool is no time, a str subclass no row of ours
            return column
    return None


def _shown(run_id: object) -> str:
    text = run_id.decode("utf-8", "replace") if isinstance(run_id, bytes) else str(run_id)
    return repr(text[:_MAX_RUN_ID_SHOWN])


def _refuse(path: str, run_id: object, table: str, row: object, column: str, why: str) -> JournalCorruptError:
    run = "" if run_id is None else f"run {_shown(run_id)}: "  # the catalogue's and memory's rows have no run
    return JournalCorruptError(f"journal {path}: {run}{table} row {row} cannot be read "
                               f"(its {column} {why}); the journal is damaged")


def check_run_row(row: Sequence[object], path: str, conn: sqlite3.Connection) -> None:
    """Refuse a run row whose columns are not of the types the schema promises, or whose
    status is none a run has.

    Raises:
        JournalCorruptError: naming the run, its ``rowid`` and the column.
    """
    column = _wrong_column(row, _RUN_TYPES)
    why = "is not of its type"
    if column is None and row[2] not in _STATUSES:
        column, why = "status", "is not a run status"
    elif column is None and row[2] != "running" and row[4] is None:  # its RunStatus had no end time: dropped
        column, why = "ended_ms", "is missing for an ended run"
    if column is not None:
        found = conn.execute("SELECT rowid FROM runs WHERE run_id IS ?", (row[0],)).fetchone()
        raise _refuse(path, row[0], "runs", found[0] if found else "?", column, why)


def check_fact_row(row: Sequence[object], path: str, conn: sqlite3.Connection) -> None:
    """Refuse a fact row whose columns are not of the types the schema promises.

    Raises:
        JournalCorruptError: naming the run, the fact's ``seq`` and the column.
    """
    column = _wrong_column(row, _FACT_TYPES)
    if column is not None:
        found = conn.execute("SELECT seq FROM facts WHERE run_id IS ? AND kind IS ? AND at_ms IS ? AND body IS ?",
                             tuple(row)).fetchone()
        raise _refuse(path, row[0], "facts", found[0] if found else "?", column, "is not of its type")


def bad_group(row: Sequence[object], path: str, conn: sqlite3.Connection) -> JournalCorruptError:
    """The error for a ``group`` fact row whose body does not hold a group (``_rows.py``),
    naming the run, the fact's ``seq`` and the column."""
    found = conn.execute("SELECT seq FROM facts WHERE run_id IS ? AND kind IS ? AND at_ms IS ? AND body IS ?",
                         tuple(row)).fetchone()
    return _refuse(path, row[0], "facts", found[0] if found else "?", "body", "is not a group of facts")


@contextmanager
def named_damage(conn: sqlite3.Connection, path: str, table: str, run_id: str | None = None) -> Iterator[None]:
    """Turn ``sqlite3``'s error for text that is not UTF-8, raised while reading ``table``
    (the rows of ``run_id``, or all), into a ``JournalCorruptError`` naming the row.

    Raises:
        JournalCorruptError: for a column that is not UTF-8 (other errors pass unchanged).
    """
    try:
        yield
    except sqlite3.OperationalError as exc:
        named = damage_named(exc, conn, path, table, run_id)
        if named is None:
            raise
        raise named from None


def damage_named(exc: sqlite3.OperationalError, conn: sqlite3.Connection, path: str, table: str,
                 run_id: str | None = None) -> JournalCorruptError | None:
    """What :func:`named_damage` raises for ``exc``, or None when ``exc`` is not about text
    that is not UTF-8 (for a read on a hot path, where a ``with`` would cost every call)."""
    found = _UNDECODABLE.search(str(exc))
    return None if found is None else _undecodable(conn, path, table, run_id, found.group(1))


def absent_table(exc: sqlite3.OperationalError, conn: sqlite3.Connection, path: str, table: str, empty: _T) -> _T:
    """``empty`` when ``exc`` says ``table`` does not exist (a journal older than it, opened
    read-only: nothing to read); otherwise raise it, or the damage it reports.

    Raises:
        JournalCorruptError: for a row of ``table`` that is not UTF-8 text.
        sqlite3.OperationalError: ``exc``, for any other failure.
    """
    if "no such table" not in str(exc):
        raise damage_named(exc, conn, path, table) or exc
    return empty


def _undecodable(conn: sqlite3.Connection, path: str, table: str, run_id: str | None, column: str) -> JournalCorruptError:
    key = "seq" if table == "facts" else "rowid"
    where, args = ("WHERE run_id = ?", (run_id,)) if run_id is not None else ("", ())
    run = "run_id" if table in ("runs", "facts") else "NULL"
    factory = conn.text_factory
    conn.text_factory = bytes  # read every text as bytes to find the row that does not decode
    try:
        for row in conn.execute(f"SELECT {key}, {run}, {column} FROM {table} {where} ORDER BY {key}", args):
            for value in row[1:]:
                if isinstance(value, bytes) and not _is_utf8(value):
                    return _refuse(path, row[1], table, row[0], column, "is not UTF-8 text")
    finally:
        conn.text_factory = factory
    return JournalCorruptError(f"journal {path}: a {table} row cannot be read (its {column} is not UTF-8 text); "
                               "the journal is damaged")


def _is_utf8(value: bytes) -> bool:
    try:
        value.decode()
    except UnicodeDecodeError:
        return False
    return True
