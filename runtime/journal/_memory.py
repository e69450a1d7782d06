"""The journal's ``memory`` table: small opaque records kept for a while (the edge's sessions).

Each row is ``(scope, key) -> (body, until_ms)``: written or forgotten in the batch that
caused it, and bounded per scope in the same transaction (rows past their time go, and only
the rows kept longest stay past a count). The journal never reads a body.
"""

from __future__ import annotations

import sqlite3

from ontoflow.runtime.journal._damage import absent_table

__all__ = ["read_memory", "write_memory"]


def write_memory(
    conn: sqlite3.Connection,
    rows: dict[tuple[str, str], tuple[bytes, int] | None],
    bounds: dict[str, tuple[int, int]],
) -> None:
    """Write ``rows`` (``None``: forget the key), then apply each scope's ``(now_ms, most)``
    bound, inside the caller's transaction."""
    kept = [(scope, key, row[0], row[1]) for (scope, key), row in rows.items() if row is not None]
    gone = [(scope, key) for (scope, key), row in rows.items() if row is None]
    if kept:
        conn.executemany("INSERT OR REPLACE INTO memory (scope, key, body, until_ms) VALUES (?, ?, ?, ?)", kept)
    if gone:
        conn.executemany("DELETE FROM memory WHERE scope = ? AND key = ?", gone)
    for scope, (now_ms, most) in bounds.items():
        conn.execute("DELETE FROM memory WHERE scope = ? AND until_ms < ?", (scope, now_ms))
        conn.execute("DELETE FROM memory WHERE scope = ? AND key NOT IN "
                     "(SELECT key FROM memory WHERE scope = ? ORDER BY until_ms DESC, key LIMIT ?)", (scope, scope, most))


def read_memory(conn: sqlite3.Connection, path: str, scope: str, now_ms: int) -> list[tuple[str, bytes, int]]:
    """The rows of ``scope`` kept until ``now_ms`` or later, those kept longest last; empty when
    the journal has no ``memory`` table (an older one opened read-only)."""
    try:
        rows = conn.execute("SELECT key, body, until_ms FROM memory WHERE scope = ? AND until_ms >= ? "
                            "ORDER BY until_ms, key", (scope, now_ms)).fetchall()
    except sqlite3.OperationalError as exc:  # no such table; a damaged row raises, named
        return absent_table(exc, conn, path, "memory", [])
    return [(r[0], r[1], r[2]) for r in rows]
