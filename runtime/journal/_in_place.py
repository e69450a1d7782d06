"""Whether the journal's path still names the files a writer has open.

SQLite writes through the descriptors it opened: a journal (or its WAL) removed, renamed or
replaced while a daemon runs is still written, and every commit still succeeds, but into a file
no path names any more. The next start finds no such journal (or an older WAL-less one) and
recovers nothing of what was acknowledged since (a ``tmp`` cleaner's ``rm``, an operator's ``mv``,
a backup restored over it). So a writer checks before each commit that the path's file and WAL
are the ones it writes (device and inode, two ``stat`` calls a batch); when one is not, the
commit fails as a full disk does (nothing of the batch is written or sent, the daemon answers
``unavailable`` and tries again), and goes on by itself once the file is back where it was.
"""

from __future__ import annotations

import os

import structlog

from ontoflow.runtime.journal.errors import JournalError

__all__ = ["InPlace"]

log = structlog.get_logger()


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


class InPlace:
    """The identities (device, inode) of a writer's journal file and WAL, checked at each commit.

    Args:
        path: the journal's path (links followed, as SQLite follows them).
    """

    __slots__ = ("_file", "_moved", "_wal", "_wal_path", "path")

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(path)  # as SQLite keeps it: a later chdir must not look like a move
        self._file = _identity(self.path)
        # SQLite keeps the WAL beside the file a link names, not beside the link: looked for
        # there, a linked journal's WAL was never found, and its removal never noticed.
        self._wal_path = f"{os.path.realpath(self.path)}-wal"
        self._wal: tuple[int, int] | None = None  # learnt at the first commit (SQLite makes it lazily)
        self._moved = False

    def check(self) -> None:
        """Raise unless the path still names the files this writer has open.

        Raises:
            JournalError: naming the journal and which of its files is gone or replaced.
        """
        gone = None
        if self._file is not None and _identity(self.path) != self._file:
            gone = "the journal file"
        elif self._wal is not None and _identity(self._wal_path) != self._wal:
            gone = "its WAL file (-wal)"
        if gone is None:
            if self._moved:
                log.warning("journal_back_in_place", path=self.path)
                self._moved = False
            return
        if not self._moved:  # once per absence: the commit is retried every few seconds
            log.critical("journal_moved", path=self.path, file=gone)
            self._moved = True
        raise JournalError(f"journal {self.path}: {gone} was removed or replaced while this process had it open; "
                           "nothing more is written (a restart would not find it): put it back, or stop the daemon")

    def committed(self) -> None:
        """A commit succeeded: the WAL exists now; learn its identity once."""
        if self._wal is None and self._file is not None:
            self._wal = _identity(self._wal_path)
