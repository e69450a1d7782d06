"""Opening a journal to write it: the owner lock, then the file created or checked and migrated.

:func:`open_journal` runs once, when a daemon starts (and :func:`_prepare` once per open of a
shared journal, ``_shared.py``); a run never comes here. A file that is not a sound ontoflow
journal of a version this ontoflow knows is refused (``JournalCorruptError``,
``JournalVersionError``), never reset; an older one is migrated (``_schema.migrate``).
"""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path
from urllib.parse import quote

import structlog

from ontoflow.runtime.journal._journal import Journal
from ontoflow.runtime.journal._lock import check_folder, lock_journal, prepare_journal_file, tighten_journal_files
from ontoflow.runtime.journal._schema import SCHEMA, SCHEMA_VERSION, migrate
from ontoflow.runtime.journal.errors import JournalCorruptError, JournalError, JournalVersionError

__all__ = ["connect_file", "open_journal"]

log = structlog.get_logger()

#: The tables a journal of the current schema has (checked at open).
_TABLES = frozenset(re.findall(r"CREATE TABLE (\w+)", SCHEMA))

#: The size the WAL is cut back to once checkpointed. SQLite reuses a WAL from its start and
#: never shrinks it: one burst (thousands of submits in one group commit) left a WAL of its size
#: beside the journal for the daemon's life, the room of every row twice. Twice the automatic
#: checkpoint's 1,000 pages of 4 KiB: a steady daemon's WAL never reaches it.
WAL_KEPT_BYTES = 8 << 20


def open_journal(path: str | Path, *, synchronous: str = "NORMAL", check: bool = True) -> Journal:
    """Open (or create) the journal at ``path``.

    Args:
        path: the SQLite file; created with the current schema when absent or empty.
        synchronous: ``NORMAL`` (survives a killed process) or ``FULL`` (survives a power cut).
        check: run SQLite's ``quick_check`` first.

    The caller becomes the journal's one writer: it holds ``<path>.lock`` until ``close`` (or
    its death). The file, its WAL and its shared-memory index are readable by the owner only.
    An open that fails removes the lock file it created and changes no mode (nothing is left
    beside, nor changed in, a file that is no journal).

    Raises:
        JournalPathError: when the journal's folder does not exist.
        JournalLockedError: when another process has the journal open (names its pid), or
            has it open through another name (a hard link).
        JournalCorruptError: when the file is not a SQLite database, fails the check, or is a
            database without ontoflow's tables.
        JournalVersionError: when its schema version is newer than :data:`SCHEMA_VERSION`.
        JournalError: when the file cannot be opened at all (no permission, a full disk, an I/O
            error: SQLite's error is not one of damage).
    """
    if synchronous not in ("NORMAL", "FULL"):
        raise ValueError("synchronous must be NORMAL or FULL")
    where = str(path)
    file = Path(where)
    check_folder(file)
    lock = lock_journal(file)
    try:
        prepare_journal_file(file)
        lock.hold_file(file)
        conn = connect_file(where)
    except sqlite3.Error as exc:
        lock.release(failed_open=True)
        raise JournalError(f"journal {where}: cannot open: {exc}") from None
    except BaseException:
        lock.release(failed_open=True)
        raise
    try:
        _prepare(conn, where, synchronous, check)
    except BaseException:
        conn.close()
        lock.release(failed_open=True)
        raise
    tighten_journal_files(file)
    return Journal(conn, where, lock)


def connect_file(where: str, **options: float) -> sqlite3.Connection:
    """Connect to the file named ``where``, as a file name whatever it looks like.

    This SQLite reads every file name as a URI (``USE_URI``): a relative ``--journal`` such as
    ``file:runs.sqlite?mode=memory`` was a journal in memory (nothing durable, every run
    acknowledged lost at the next start), and ``file:runs.sqlite`` wrote ``runs.sqlite`` while
    the lock was taken on a file named ``file:runs.sqlite`` (two daemons on one journal). So the
    URI is made here, the path quoted, as ``open_journal_readonly`` makes its own.
    """
    uri = f"file:{quote(os.path.abspath(where))}"
    return sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False, **options)


#: SQLite's primary result codes that say nothing of the file: PERM, BUSY, LOCKED, NOMEM,
#: READONLY, IOERR, FULL, CANTOPEN (the others: damage, or a database that is not a journal).
_NOT_DAMAGE_CODES = frozenset({3, 5, 6, 7, 8, 10, 13, 14})


def _unreadable(exc: sqlite3.DatabaseError, where: str, what: str) -> JournalError:
    """The error for a journal SQLite could not read: damage (``JournalCorruptError``) only when
    SQLite says so. A full disk (the index beside the journal cannot be made) was "is not a
    readable SQLite database": an operator told so may delete a sound journal."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None or code & 0xFF not in _NOT_DAMAGE_CODES:
        return JournalCorruptError(f"journal {where} {what} ({exc}); refusing to start")
    try:
        full = os.statvfs(Path(where).parent).f_bavail == 0
    except OSError:
        full = False
    hint = "its disk is full: free some room" if full else "check its disk and its permissions"
    return JournalError(f"journal {where} cannot be opened ({exc}); the file itself was not found damaged: "
                        f"{hint}, then start again")


#: A WAL's header alone: past it, frames (commits) that were never moved into the journal file.
_WAL_HEADER_BYTES = 32


def _check_orphan_wal(where: str) -> None:
    """Refuse an empty journal file beside a WAL holding commits.

    SQLite reads a WAL only for a database whose header says WAL mode: an empty file (cut to
    nothing, or deleted and its WAL left behind) was taken for a new journal, its WAL of
    acknowledged runs overwritten by the new schema, and the daemon started with none of them.
    SQLite itself never leaves that state (the journal's first page is written when it turns
    WAL on), so it is damage.

    Raises:
        JournalCorruptError: naming the journal and its WAL.
    """
    try:
        empty = os.stat(where).st_size == 0
        wal = os.stat(f"{os.path.realpath(where)}-wal").st_size if empty else 0  # beside a link's file, as SQLite keeps it
    except OSError:
        return  # no WAL (or nothing to look at): SQLite's own open says the rest
    if wal > _WAL_HEADER_BYTES:
        raise JournalCorruptError(
            f"journal {where} is empty but its WAL {where}-wal holds {wal} bytes of commits, which opening it would "
            "discard; refusing to start: restore the journal file, or move the WAL away to start a new journal")


def _prepare(conn: sqlite3.Connection, where: str, synchronous: str, check: bool) -> None:
    _check_orphan_wal(where)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if check:
            verdict = conn.execute("PRAGMA quick_check(1)").fetchone()[0]
            if verdict != "ok":
                raise JournalCorruptError(f"journal {where} is damaged (SQLite quick_check failed); refusing to start")
    except sqlite3.DatabaseError as exc:
        raise _unreadable(exc, where, "is not a readable SQLite database") from None
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={synchronous}")
        conn.execute(f"PRAGMA journal_size_limit={WAL_KEPT_BYTES}")
        if not tables:
            conn.executescript("BEGIN;" + SCHEMA + "COMMIT;")
            conn.execute("INSERT INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            log.info("journal_created", path=where, schema_version=SCHEMA_VERSION)
            return
        if "meta" not in tables:
            raise JournalCorruptError(f"journal {where} is a SQLite database but not an ontoflow journal; refusing to start")
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.DatabaseError as exc:
        raise _unreadable(exc, where, "cannot be read") from None
    try:
        version = int(row[0]) if row is not None else -1
    except ValueError:
        version = -1
    if version < 1:
        raise JournalCorruptError(f"journal {where} has no valid schema version; refusing to start")
    if version > SCHEMA_VERSION:
        raise JournalVersionError(
            f"journal {where} has schema version {version}, newer than this ontoflow's {SCHEMA_VERSION}; "
            "upgrade ontoflow or use another journal")
    if version < SCHEMA_VERSION:
        migrate(conn, where, version)
    # A sound SQLite file may still lack one of our tables (dropped by hand, a half-restored
    # backup): refused here as damaged, not left to the first query that needs it (a traceback).
    try:
        present = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        raise _unreadable(exc, where, "cannot be read") from None
    missing = sorted(_TABLES - present)
    if missing:
        raise JournalCorruptError(f"journal {where} lacks the table {', '.join(missing)}; refusing to start")
