"""A journal several processes write at once: the embedded ``ask``'s session memory.

A daemon's journal has one writer (``_lock.py``): two daemons replaying one journal would both
dispatch its runs. The embedded ``ontoflow ask --session S`` keeps its session memory in a
journal too (the ``memory`` table, as the daemon does), but it holds no run to replay, and two
``ask`` started at once in two terminals must both work. So this journal is opened without the
owner lock, and SQLite's own locking orders the writers: WAL mode (a reader never waits), each
commit begins ``IMMEDIATE`` (it takes the write lock first, waiting up to ``busy_timeout_s``
for another process's commit to end, so no transaction ever has to be retried half-way), and a
commit that still cannot write fails as a full disk does (the batch is kept for the next one).

Only creating the file's tables or upgrading its schema holds ``<path>.lock`` (waited for, up
to the same time; links followed, as a daemon's), so two first runs do not both create the
tables. For as long as it is open, the file itself is locked shared (``flock``, on the inode:
every name of it): never a daemon's journal, which a daemon locks alone, so a session memory
given a daemon's journal through a link or another name is refused, as is a daemon started on
the file while an ``ask`` has it open. The file, its WAL and its index are readable by their
owner only, as every journal.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import time
from pathlib import Path

from ontoflow.runtime.journal._journal import Journal
from ontoflow.runtime.journal._open import _prepare, connect_file
from ontoflow.runtime.journal._lock import (
    JournalLock,
    check_folder,
    held_file_is_current,
    open_lock_file,
    prepare_journal_file,
    tighten_journal_files,
)
from ontoflow.runtime.journal.errors import JournalError, JournalLockedError

__all__ = ["SharedJournal", "open_shared_journal"]

#: How often a process waiting for ``<path>.lock`` (another one creating the tables) looks again.
_LOCK_POLL_S = 0.01


class SharedJournal(Journal):
    """A journal opened by :func:`open_shared_journal`: each commit takes the write lock first."""

    _begin = "BEGIN IMMEDIATE"


def open_shared_journal(path: str | os.PathLike[str], *, busy_timeout_s: float = 10.0) -> SharedJournal:
    """Open (or create) a journal that other processes may write at the same time.

    Use it for a journal that holds no runs (the embedded ``ask``'s session memory): nothing
    stops two processes from both replaying the runs of a shared journal.

    Args:
        path: the SQLite file; created with the current schema when absent or empty.
        busy_timeout_s: how long a commit (or the open) waits for another process's.

    Raises:
        JournalPathError: when the journal's folder does not exist.
        JournalLockedError: when another process held ``<path>.lock`` (creating the tables, or
            a daemon owning the file) for longer than ``busy_timeout_s``, or a daemon holds the
            file through another name (a hard link).
        JournalCorruptError, JournalVersionError, JournalError: as :func:`open_journal`.
    """
    where = str(path)
    file = Path(where)
    check_folder(file)
    if os.path.isfile(file):  # a daemon's journal is refused at once, not after the wait below
        JournalLock(None, file).hold_file(file, shared=True).release()
    lock = _wait_for_lock(file, busy_timeout_s)
    try:
        prepare_journal_file(file)
        lock.hold_file(file, shared=True)
        try:
            conn = connect_file(where, timeout=busy_timeout_s)
        except sqlite3.Error as exc:
            raise JournalError(f"journal {where}: cannot open: {exc}") from None
        try:
            _prepare(conn, where, "NORMAL", True)
        except BaseException:
            conn.close()
            raise
    except BaseException:
        lock.release(failed_open=True)  # a lock file it created goes (as ``open_journal``'s)
        raise
    tighten_journal_files(file)
    # The tables exist now: SQLite's locks order everything after. The file's shared lock stays.
    return SharedJournal(conn, where, lock.keep_file_only())


def _wait_for_lock(path: Path, timeout_s: float) -> JournalLock:
    """Take ``<path>.lock``, waiting up to ``timeout_s``.

    Raises:
        JournalLockedError: still held after ``timeout_s``.
        JournalError: the lock file cannot be opened.
    """
    lock_path = Path(f"{os.path.realpath(path)}.lock")  # links followed, as ``lock_journal``'s
    fd, created = open_lock_file(path, lock_path)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if held_file_is_current(fd, lock_path):
                return JournalLock(fd, lock_path, created=created)
            os.close(fd)  # removed by an open that failed meanwhile: lock the file at the path
            fd, created = open_lock_file(path, lock_path)
            continue
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise JournalLockedError(f"journal {path} stayed locked by another process for {timeout_s:g} s "
                                         f"(lock {lock_path})", path=str(path), pid=None) from None
            time.sleep(_LOCK_POLL_S)  # a creation takes milliseconds; flock has no timed wait
        except OSError as exc:
            os.close(fd)
            raise JournalError(f"journal {path}: cannot lock {lock_path}: {exc.strerror}") from None
