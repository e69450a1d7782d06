"""Pruning a journal: runs ended before a time go, with their facts and the sources no run
pins any more (``Journal.prune``; off a run's path)."""

from __future__ import annotations

import sqlite3

from ontoflow.runtime.journal._schema import PRUNE
from ontoflow.runtime.journal.errors import JournalError

__all__ = ["prune"]


def prune(conn: sqlite3.Connection, where: str, ended_before_ms: int) -> int:
    """Delete, in one transaction, the runs of ``conn`` that ended before ``ended_before_ms``
    with their facts; returns how many.

    Raises:
        JournalError: when SQLite refuses the delete (nothing of it is kept).
    """
    facts, runs, sources = PRUNE
    try:
        conn.execute("BEGIN")
        conn.execute(facts, (ended_before_ms,))
        pruned = conn.execute(runs, (ended_before_ms,)).rowcount
        conn.execute(sources)
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise JournalError(f"journal {where}: prune failed: {exc}") from None
    return pruned
