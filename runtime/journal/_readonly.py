"""Opening a journal to read only: for ``ontoflow replay`` and other tools that must not change it.

A tool that inspects a journal must leave its bytes exactly as they were, whether the daemon
that owns it is running, stopped cleanly or was killed. SQLite's ``mode=ro`` alone is not
enough: on a journal closed cleanly (no ``-wal`` file) it creates an empty ``-wal`` and a
``-shm`` beside it. So:

- no ``-wal`` file: the journal was closed cleanly, everything is in the main file and nobody
  is writing; it is opened ``immutable=1`` (no lock, no side file, nothing created);
- a ``-wal`` file, with frames or empty (a daemon running, or one killed): it is opened
  ``mode=ro``, which reads the WAL's committed frames and never writes the main file or the
  WAL. SQLite may rebuild its shared-memory index (``-shm``), which is a cache of the WAL and
  not part of the journal's content. An empty ``-wal`` is no sign that nobody writes: a live
  daemon's WAL is empty right after a checkpoint, and ``immutable=1`` (which reads no WAL and
  takes no lock) would then never see what it commits next, or read a page mid-checkpoint.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from ontoflow.runtime.journal._journal import SCHEMA_VERSION, CommitBatch, Journal
from ontoflow.runtime.journal.errors import JournalCorruptError, JournalError, JournalVersionError

__all__ = ["ReadOnlyJournal", "open_journal_readonly"]


class ReadOnlyJournal(Journal):
    """A journal opened by :func:`open_journal_readonly`: every read of :class:`Journal`, no write."""

    def commit(self, batch: CommitBatch) -> None:
        """Refuse: a read-only journal is never written.

        Raises:
            JournalError: always.
        """
        raise JournalError(f"journal {self.path} is open read-only")

    def prune(self, ended_before_ms: int) -> int:
        """Refuse: a read-only journal is never written.

        Raises:
            JournalError: always.
        """
        raise JournalError(f"journal {self.path} is open read-only")

    def close(self) -> None:
        """Close the file (no checkpoint: that would write)."""
        self._conn.close()

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Read everything inside as of one moment (one read transaction; nested: the outer one).

        A live daemon commits between two reads: a run's row read ``running`` and its facts
        read after the fact that ended it disagree, and a replay reported a mismatch the
        journal does not hold. In WAL mode a read transaction sees one commit and no later one.
        """
        if self._conn.in_transaction:
            yield
            return
        self._conn.execute("BEGIN")
        try:
            yield
        finally:
            if self._conn.in_transaction:
                self._conn.execute("COMMIT")  # a read-only transaction: nothing is written


def open_journal_readonly(path: str | Path, *, check: bool = True) -> ReadOnlyJournal:
    """Open the existing journal at ``path`` without changing a byte of it (see the module docstring).

    Args:
        path: the journal's SQLite file.
        check: run SQLite's ``quick_check`` first.

    Raises:
        JournalError: when the file does not exist or cannot be opened.
        JournalCorruptError: when it is not a SQLite database, fails the check, or has no
            ontoflow tables.
        JournalVersionError: when its schema version is newer than :data:`SCHEMA_VERSION`.
    """
    file = Path(path)
    where = str(path)
    if not file.is_file():
        raise JournalError(f"journal {where} does not exist (or is not a file)")
    wal = file.with_name(file.name + "-wal")
    quiet = not wal.exists()
    uri = f"file:{quote(str(file.resolve()))}?" + ("immutable=1" if quiet else "mode=ro")
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise JournalError(f"journal {where}: cannot open: {exc}") from None
    try:
        # A journal may come from anyone (a file handed over for ``replay`` or ``graph --run``):
        # its own schema (views, triggers, generated columns, CHECKs) may use no function or
        # virtual table SQLite does not mark harmless (a view over ``pragma_database_list``
        # read the reader's file names), and this connection writes nothing, a TEMP table
        # included (``mode=ro`` and ``immutable`` refuse only the file's writes).
        conn.execute("PRAGMA trusted_schema = OFF")
        conn.execute("PRAGMA query_only = ON")
        version = _check(conn, where, check)
        _check_whole_pages(conn, file, where, quiet)
    except BaseException:
        conn.close()
        raise
    return ReadOnlyJournal(conn, where, version=version)


def _check_whole_pages(conn: sqlite3.Connection, file: Path, where: str, quiet: bool) -> None:
    """Refuse a main file cut short inside a page.

    SQLite writes whole pages at page-aligned offsets, so a journal's main file is always a
    whole number of pages. One cut short mid-page is read as if its tail were zeros, and passes
    ``quick_check`` and ``integrity_check`` (the cells lost are simply not there): ``replay``
    reported a run whose last rows were cut as a mismatch ("s3#1 was never sent"), accusing the
    daemon of a decision the disk lost. With no WAL (``immutable``: nobody writes) a file shorter
    than the pages its header counts is cut short too.

    Raises:
        JournalCorruptError: naming the journal and its size, never its bytes.
    """
    try:
        page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
        pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
        size = file.stat().st_size
    except (sqlite3.DatabaseError, OSError, TypeError, ValueError) as exc:
        raise JournalCorruptError(f"journal {where} is not a readable SQLite database ({type(exc).__name__})") from None
    if page_size > 0 and (size % page_size or (quiet and size < pages * page_size)):
        raise JournalCorruptError(
            f"journal {where} is damaged: its file is {size:,} bytes, not the whole {page_size:,}-byte pages "
            "it holds (cut short?)")


def _check(conn: sqlite3.Connection, where: str, check: bool) -> int:
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if check and conn.execute("PRAGMA quick_check(1)").fetchone()[0] != "ok":
            raise JournalCorruptError(f"journal {where} is damaged (SQLite quick_check failed)")
        if not {"meta", "runs", "facts", "sources"} <= tables:
            raise JournalCorruptError(f"journal {where} is not an ontoflow journal (its tables are missing)")
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.DatabaseError as exc:
        raise JournalCorruptError(f"journal {where} is not a readable SQLite database ({exc})") from None
    try:
        version = int(row[0]) if row is not None else -1
    except ValueError:
        version = -1
    if version < 1:
        raise JournalCorruptError(f"journal {where} has no valid schema version")
    if version > SCHEMA_VERSION:
        raise JournalVersionError(
            f"journal {where} has schema version {version}, newer than this ontoflow's {SCHEMA_VERSION}; "
            "upgrade ontoflow to read it")
    return version
