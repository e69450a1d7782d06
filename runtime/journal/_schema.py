"""The journal's tables, their version, and how an older journal is brought up to it.

Schema versions: 1 had no ``capabilities`` table, 2 no ``runs.owner`` column, 3 no ``memory``
table. A version only adds (a table, a column, an index): what an older ontoflow wrote stays
readable as it was.
"""

from __future__ import annotations

import sqlite3

import structlog

from ontoflow.runtime.journal.errors import JournalError

__all__ = ["MIGRATIONS", "SCHEMA", "SCHEMA_VERSION", "migrate"]

log = structlog.get_logger()

#: Bumped when the tables change; a journal with a higher number is refused.
SCHEMA_VERSION = 4

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE sources (hash TEXT PRIMARY KEY, body BLOB NOT NULL);
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    source_hash TEXT NOT NULL,
    status TEXT NOT NULL,
    submitted_ms INTEGER NOT NULL,
    ended_ms INTEGER,
    deadline_at_ms INTEGER,
    idempotency_key TEXT UNIQUE,
    trigger_key TEXT UNIQUE,
    name TEXT NOT NULL DEFAULT '',
    owner TEXT
);
CREATE INDEX runs_by_status ON runs (status, submitted_ms);
CREATE TABLE facts (
    seq INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    body BLOB NOT NULL
);
CREATE INDEX facts_by_run ON facts (run_id, seq);
CREATE TABLE capabilities (id TEXT PRIMARY KEY, metadata BLOB NOT NULL, seen_ms INTEGER NOT NULL);
CREATE TABLE memory (scope TEXT NOT NULL, key TEXT NOT NULL, body BLOB NOT NULL, until_ms INTEGER NOT NULL,
                     PRIMARY KEY (scope, key));
CREATE INDEX memory_by_age ON memory (scope, until_ms);
"""

#: What each version adds to the one before it: ``MIGRATIONS[v]`` (statements) turns version
#: ``v - 1`` into ``v``.
MIGRATIONS = {
    2: ("CREATE TABLE IF NOT EXISTS capabilities (id TEXT PRIMARY KEY, metadata BLOB NOT NULL, seen_ms INTEGER NOT NULL)",),
    3: ("ALTER TABLE runs ADD COLUMN owner TEXT",),
    4: ("CREATE TABLE IF NOT EXISTS memory (scope TEXT NOT NULL, key TEXT NOT NULL, body BLOB NOT NULL, "
        "until_ms INTEGER NOT NULL, PRIMARY KEY (scope, key))",
        "CREATE INDEX IF NOT EXISTS memory_by_age ON memory (scope, until_ms)"),
}


def migrate(conn: sqlite3.Connection, where: str, version: int) -> None:
    """Bring a journal of an older schema ``version`` up to :data:`SCHEMA_VERSION` in one
    transaction (only tables are added: what an older version wrote stays as it was).

    Raises:
        JournalError: when SQLite refuses a step (nothing of the upgrade is kept).
    """
    try:
        conn.execute("BEGIN")
        for step in range(version + 1, SCHEMA_VERSION + 1):
            for statement in MIGRATIONS[step]:
                conn.execute(statement)
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise JournalError(f"journal {where}: cannot upgrade its schema from version {version}: {exc}") from None
    log.info("journal_migrated", path=where, from_version=version, schema_version=SCHEMA_VERSION)
