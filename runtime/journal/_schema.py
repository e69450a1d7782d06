"""The journal's tables, their version, how an older journal is brought up to it, and the
statements a group commit writes its rows with.

Tables::

    meta     (key, value)                    schema_version
    sources  (hash, body)                    a run's pinned workflow source, stored once per hash
    runs     (run_id, source_hash, status,   one row per run; status 'running' until it ends
              submitted_ms, ended_ms, deadline_at_ms, idempotency_key, trigger_key, name,
              owner)                          owner: the client key that submitted it (roles on)
    facts    (seq, run_id, kind, at_ms, body)  append-only; replayed in seq order; a row of
                                             kind ``group`` holds several facts of one run at
                                             one time (``_rows.py``), read back as they were
    capabilities (id, metadata, seen_ms)     the catalogue: every capability a worker offered
                                             (or the daemon was told of), its encoded metadata
    memory   (scope, key, body, until_ms)    what the edge remembers between sentences (a
                                             session's last turns, a conversation's session),
                                             opaque bodies, each kept until ``until_ms``

Schema versions: 1 had no ``capabilities`` table, 2 no ``runs.owner`` column, 3 no ``memory``
table, 4 no ``group`` fact rows. A version only adds (a table, a column, an index, a kind of
row): what an older ontoflow wrote stays readable as it was; an older ontoflow refuses a newer
journal (it would skip a ``group`` row's facts on replay).

An idempotency or trigger key is unique among the runs that have one: a partial unique index
(``runs_by_key``, ``runs_by_trigger``) holds only those, so the daemon's usual submit, keyless,
adds no entry to them (a ``UNIQUE`` column, as journals created before had, indexes every
NULL too). Both refuse a key taken, and a lookup by key uses either, so a journal of either
form is the same version: an older one keeps its constraints as they are.
"""

from __future__ import annotations

import sqlite3

import structlog

from ontoflow.runtime.journal.errors import JournalError

__all__ = [
    "BARE_RUNS_INSERT", "CHUNK_SIZES", "ENDS_UPDATE", "FACTS_INSERT", "MIGRATIONS", "RUN_CHUNK_SIZES", "RUN_COLUMNS",
    "RUNS_INSERT", "SCHEMA", "SCHEMA_VERSION", "SHARED_ENDS_UPDATE", "SHARED_RUNS_INSERT", "migrate",
]

log = structlog.get_logger()

#: Bumped when the tables change; a journal with a higher number is refused.
SCHEMA_VERSION = 5

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
    idempotency_key TEXT,
    trigger_key TEXT,
    name TEXT NOT NULL DEFAULT '',
    owner TEXT
);
CREATE INDEX runs_by_status ON runs (status, submitted_ms);
CREATE UNIQUE INDEX runs_by_key ON runs (idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE UNIQUE INDEX runs_by_trigger ON runs (trigger_key) WHERE trigger_key IS NOT NULL;
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

# -- the statements a group commit writes with (``_rows.insert_facts`` and its kin) ----------

#: The columns of a run row, in ``RunRow``'s field order.
RUN_COLUMNS = "run_id, source_hash, status, submitted_ms, ended_ms, deadline_at_ms, idempotency_key, trigger_key, name, owner"

#: Fact rows per INSERT statement, largest first: a batch is cut into chunks of these sizes so
#: that only these few statements exist and stay in sqlite3's statement cache. 4 parameters per
#: row keep the largest under SQLite's oldest limit of 999.
CHUNK_SIZES = (128, 64, 32, 16, 8, 4, 2, 1)
FACTS_INSERT = {
    n: "INSERT INTO facts (run_id, kind, at_ms, body) VALUES " + ", ".join(["(?, ?, ?, ?)"] * n) for n in CHUNK_SIZES
}
#: Runs' ends, a chunk per statement (``UPDATE ... FROM``: SQLite 3.33; before, one per row).
ENDS_UPDATE = {
    n: "UPDATE runs SET status = v.column1, ended_ms = v.column2 FROM (VALUES "
    + ", ".join(["(?, ?, ?)"] * n) + ") AS v WHERE runs.run_id = v.column3" for n in CHUNK_SIZES
} if sqlite3.sqlite_version_info >= (3, 33, 0) else None
#: The same for ends that share their status (``?1``, bound once per statement).
SHARED_ENDS_UPDATE = {
    n: "UPDATE runs SET status = ?1, ended_ms = v.column1 FROM (VALUES "
    + ", ".join(f"(?{2 + 2 * i}, ?{3 + 2 * i})" for i in range(n)) + ") AS v WHERE runs.run_id = v.column2"
    for n in CHUNK_SIZES
}
#: The same for run rows: 10 parameters per row, so at most 64 rows per statement.
RUN_CHUNK_SIZES = (64, 32, 16, 8, 4, 2, 1)
RUNS_INSERT = {
    n: f"INSERT INTO runs ({RUN_COLUMNS}) VALUES " + ", ".join(["(?,?,?,?,?,?,?,?,?,?)"] * n) for n in RUN_CHUNK_SIZES
}
#: A bare run row (a daemon's usual submit: no deadline, no idempotency or trigger key, no
#: owner, not ended) binds 5 values; the columns left out take their NULL default.
_BARE_COLUMNS = "run_id, source_hash, status, submitted_ms, name"
BARE_RUNS_INSERT = {
    n: f"INSERT INTO runs ({_BARE_COLUMNS}) VALUES " + ", ".join(["(?,?,?,?,?)"] * n) for n in CHUNK_SIZES
}
#: Bare run rows that share their source, status and name (a daemon's submits of one
#: workflow): those three bound once per statement (``?1``-``?3``), each row binding its run id
#: and time only. Each row stores the same values as through ``BARE_RUNS_INSERT``.
SHARED_RUNS_INSERT = {
    n: f"INSERT INTO runs ({_BARE_COLUMNS}) VALUES "
    + ", ".join(f"(?{4 + 2 * i}, ?1, ?2, ?{5 + 2 * i}, ?3)" for i in range(n)) for n in CHUNK_SIZES
}

#: What each version adds to the one before it: ``MIGRATIONS[v]`` (statements) turns version
#: ``v - 1`` into ``v``.
MIGRATIONS = {
    2: ("CREATE TABLE IF NOT EXISTS capabilities (id TEXT PRIMARY KEY, metadata BLOB NOT NULL, seen_ms INTEGER NOT NULL)",),
    3: ("ALTER TABLE runs ADD COLUMN owner TEXT",),
    4: ("CREATE TABLE IF NOT EXISTS memory (scope TEXT NOT NULL, key TEXT NOT NULL, body BLOB NOT NULL, "
        "until_ms INTEGER NOT NULL, PRIMARY KEY (scope, key))",
        "CREATE INDEX IF NOT EXISTS memory_by_age ON memory (scope, until_ms)"),
    5: (),  # ``group`` fact rows: nothing to change in the tables, only what may be written
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
