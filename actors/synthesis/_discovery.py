"""Discovery: what a SQLite database holds, summarised for synthesis (seed 003's DISCOVERY).

The summary names tables, their columns with declared types, and row counts; it never holds
a row, and it names the source only as the request named it (a path, or ``@name``), never by a
connection's resolved value, so it can go into a prompt, a log line or the journal.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from urllib.parse import quote

import msgspec

from ontoflow.actors.synthesis.errors import SourceNotFoundError

__all__ = ["ColumnSummary", "DiscoverySummary", "TableSummary", "discover_sqlite", "quote_identifier"]


class ColumnSummary(msgspec.Struct, frozen=True, kw_only=True):
    """One column: its name and declared type (``""`` when the table declares none)."""

    name: str
    type: str = ""


class TableSummary(msgspec.Struct, frozen=True, kw_only=True):
    """One table: its name, its columns in order, and how many rows it has."""

    name: str
    columns: list[ColumnSummary]
    rows: int


class DiscoverySummary(msgspec.Struct, frozen=True, kw_only=True):
    """What a source holds: ``source`` as the request named it, its tables by name, and the
    tables this SQLite cannot read (``unreadable``: a virtual table whose module is not loaded
    here, as SpatiaLite's and GeoPackage's indexes are), by name."""

    source: str
    kind: str = "sqlite"
    tables: list[TableSummary] = []
    unreadable: list[str] = []

    def table(self, name: str) -> TableSummary | None:
        """The table called ``name`` (exact, then case-insensitive), or None."""
        for table in self.tables:
            if table.name == name:
                return table
        folded = name.casefold()
        return next((t for t in self.tables if t.name.casefold() == folded), None)


def quote_identifier(name: str) -> str:
    """``name`` as a SQLite identifier in double quotes (a quote inside doubled)."""
    return '"' + name.replace('"', '""') + '"'


_BUSY = (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED (the primary code: the low byte of an extended one)


def discover_sqlite(path: str | Path, *, source: str | None = None, busy_timeout_s: float = 5.0) -> DiscoverySummary:
    """Summarise the SQLite database file at ``path``, opened read-only, in one read transaction.

    Blocking (SQLite waits up to ``busy_timeout_s`` for a writer's lock): call it off the event
    loop (``DiscoverSource`` runs it in a worker thread).

    Args:
        path: the database file (a resolved connection or the path the request gave).
        source: how the request named it (kept in the summary); ``str(path)`` by default.
        busy_timeout_s: how long to wait for another program's lock on the database.

    Raises:
        SourceNotFoundError: when the file does not exist, is not a SQLite database, or stays
            locked by another program (the message names ``source``, never a resolved
            connection value).
    """
    shown = source if source is not None else str(path)
    file = Path(path).expanduser()
    if not file.is_file():
        raise SourceNotFoundError(f"the SQLite database {shown} does not exist")
    uri = f"file:{quote(str(file.resolve()))}?mode=ro"
    try:
        db = sqlite3.connect(uri, uri=True, timeout=busy_timeout_s)
    except sqlite3.Error:
        raise SourceNotFoundError(f"{shown} cannot be opened as a SQLite database") from None
    try:
        db.execute("BEGIN")  # one snapshot: every count is of the same moment
        # SQLite reserves the prefix "sqlite_" (any case) for its own tables; "_" is a LIKE
        # wildcard, so unescaped it also hid user tables such as sqlite3_migrations.
        names = [row[0] for row in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' "
            "ORDER BY name")]
        tables, unreadable = [], []
        for name in names:
            ident = quote_identifier(name)
            try:
                columns = [ColumnSummary(name=row[1], type=row[2] or "")
                           for row in db.execute(f"PRAGMA table_info({ident})")]
                (rows,) = db.execute(f"SELECT count(*) FROM {ident}").fetchone()
            except sqlite3.OperationalError as exc:  # "no such module": one table, not the whole database
                if "no such module" not in str(exc):
                    raise
                unreadable.append(name)
                continue
            tables.append(TableSummary(name=name, columns=columns, rows=int(rows)))
    except sqlite3.OperationalError as exc:
        if (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF in _BUSY:
            raise SourceNotFoundError(f"{shown} is busy: another program holds it locked; try again when it is done") from None
        raise SourceNotFoundError(f"{shown} is not a SQLite database") from None
    except sqlite3.DatabaseError:
        raise SourceNotFoundError(f"{shown} is not a SQLite database") from None
    finally:
        db.close()
    return DiscoverySummary(source=shown, tables=tables, unreadable=unreadable)
