"""Pruning a journal: runs ended before a time go, with their facts and the sources no run
pins any more (``Journal.prune``; off a run's path).

A daemon prunes while it serves, on its one loop: :func:`prune_some` does a bounded share
(the next runs by insertion order) per transaction, so that the loop is given back between
shares. Pruned whole, an hour's 100,000 runs held the loop about a second, and 500,000 of a
journal's million held it 3.4 s, every client and worker unanswered meanwhile.
"""

from __future__ import annotations

import sqlite3

from ontoflow.runtime.journal.errors import JournalError

__all__ = ["MAX_TRIGGER_KEYS", "PRUNE_SHARE", "TRIGGER_SCOPE", "prune", "prune_some", "prune_sources",
           "trigger_pruned"]

#: The runs a share of a prune looks at (of them, those ended before the cut go).
PRUNE_SHARE = 1_000

#: The memory scope of the trigger keys of pruned runs, and how many are kept (about 150 bytes
#: each: 150 MB at most).
TRIGGER_SCOPE, MAX_TRIGGER_KEYS = "trigger_pruned", 1 << 20

# The runs a prune removes (ended before ?1); a share's are those whose rowid lies in (?2, ?3]
# (each run by its rowid: no index on ``ended_ms`` is needed, and a share reads only its own rows).
_ENDED = "status != 'running' AND ended_ms < ?1"
_SHARE_WHERE = f"rowid > ?2 AND rowid <= ?3 AND {_ENDED}"


def _pruning(where: str) -> tuple[str, str, str]:
    """The statements that prune the runs ``where`` selects: their trigger keys kept, their
    facts and the runs deleted (a whole prune and a share differ only in ``where``)."""
    return (
        f"INSERT OR REPLACE INTO memory (scope, key, body, until_ms) SELECT '{TRIGGER_SCOPE}', trigger_key, x'', ?1 "
        f"FROM runs WHERE {where} AND trigger_key IS NOT NULL",
        f"DELETE FROM facts WHERE run_id IN (SELECT run_id FROM runs WHERE {where})",
        f"DELETE FROM runs WHERE {where}",
    )


_WHOLE, _SHARE = _pruning(_ENDED), _pruning(_SHARE_WHERE)
_SOURCES = "DELETE FROM sources WHERE hash NOT IN (SELECT DISTINCT source_hash FROM runs)"
# The ?1 oldest keys, through the ``memory_by_age`` index: keeping the newest by ``NOT IN`` (a
# set of all 2**20 kept keys built again) held the loop 2.6 s at every prune past the bound.
_BOUND_TRIGGERS = (f"DELETE FROM memory WHERE rowid IN (SELECT rowid FROM memory WHERE scope = '{TRIGGER_SCOPE}' "
                   "ORDER BY until_ms, key DESC LIMIT ?1)")
_COUNT_TRIGGERS = f"SELECT count(*) FROM memory WHERE scope = '{TRIGGER_SCOPE}'"

#: The last rowid of the next ``?2`` runs after rowid ``?1`` (None past the table's end).
_SHARE_END = "SELECT max(rowid) FROM (SELECT rowid FROM runs WHERE rowid > ?1 ORDER BY rowid LIMIT ?2)"


def prune(conn: sqlite3.Connection, where: str, ended_before_ms: int) -> int:
    """Delete, in one transaction, the runs of ``conn`` that ended before ``ended_before_ms``
    with their facts; returns how many.

    Raises:
        JournalError: when SQLite refuses the delete (nothing of it is kept).
    """
    keep, facts, runs = _WHOLE
    try:
        conn.execute("BEGIN")
        conn.execute(keep, (ended_before_ms,))
        _bound_triggers(conn)
        conn.execute(facts, (ended_before_ms,))
        pruned = conn.execute(runs, (ended_before_ms,)).rowcount
        conn.execute(_SOURCES)
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        _rollback(conn)
        raise JournalError(f"journal {where}: prune failed: {exc}") from None
    return pruned


def prune_some(conn: sqlite3.Connection, where: str, ended_before_ms: int, after: int,
               most: int = PRUNE_SHARE) -> tuple[int, int | None]:
    """Delete, in one transaction, those of the next ``most`` runs after rowid ``after`` that
    ended before ``ended_before_ms``, with their facts (not the sources: :func:`prune_sources`).

    Returns:
        how many runs went, and the rowid the next share starts after (None: the table's end).

    Raises:
        JournalError: when SQLite refuses the delete (nothing of this share is kept).
    """
    try:
        conn.execute("BEGIN")
        end = conn.execute(_SHARE_END, (after, most)).fetchone()[0]
        if end is None:
            conn.execute("COMMIT")
            return 0, None
        keep, facts, runs = _SHARE
        conn.execute(keep, (ended_before_ms, after, end))
        conn.execute(facts, (ended_before_ms, after, end))
        pruned = conn.execute(runs, (ended_before_ms, after, end)).rowcount
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        _rollback(conn)
        raise JournalError(f"journal {where}: prune failed: {exc}") from None
    return pruned, end


def prune_sources(conn: sqlite3.Connection, where: str) -> None:
    """Delete the sources no run pins any more, and the trigger keys kept past their bound.

    Raises:
        JournalError: when SQLite refuses the delete.
    """
    try:
        conn.execute("BEGIN")
        conn.execute(_SOURCES)
        _bound_triggers(conn)
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        _rollback(conn)
        raise JournalError(f"journal {where}: prune failed: {exc}") from None


def trigger_pruned(conn: sqlite3.Connection, trigger_key: str) -> bool:
    """Whether a run started for ``trigger_key`` was pruned (within the keys kept)."""
    return conn.execute("SELECT 1 FROM memory WHERE scope = ? AND key = ?", (TRIGGER_SCOPE, trigger_key)).fetchone() is not None


def _bound_triggers(conn: sqlite3.Connection, most: int = MAX_TRIGGER_KEYS) -> None:
    """Keep the ``most`` trigger keys of the runs pruned last (a key dropped costs at worst its
    observation's run again, as before keys were kept); the oldest past them go."""
    excess = conn.execute(_COUNT_TRIGGERS).fetchone()[0] - most
    if excess > 0:
        conn.execute(_BOUND_TRIGGERS, (excess,))


def _rollback(conn: sqlite3.Connection) -> None:
    """Undo a failed prune; a rollback that fails too (the disk) is done by the next commit,
    which rolls back a transaction it finds open."""
    try:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
    except sqlite3.Error:
        pass
