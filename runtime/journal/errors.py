"""Errors of the journal.

The hierarchy::

    JournalError (runtime.errors.KernelError)
    ├── JournalBatchError       a batch cannot be written, and never will be (not the disk's fault)
    ├── JournalCorruptError     the file is not an ontoflow journal SQLite can read
    ├── JournalLockedError      another process holds the journal (one writer per journal)
    ├── JournalPathError        the journal's folder does not exist (a configuration error)
    └── JournalVersionError     the journal was written by a newer ontoflow

A journal is never reset silently: each error stops the daemon with a clear message.
"""

from __future__ import annotations

from ontoflow.runtime.errors import KernelError

__all__ = ["JournalBatchError", "JournalCorruptError", "JournalError", "JournalLockedError", "JournalPathError", "JournalVersionError"]


class JournalError(KernelError):
    """Raised when the journal cannot be opened, read or written."""


class JournalBatchError(JournalError):
    """Raised when a batch itself cannot be written (a value SQLite cannot store, a constraint it
    breaks): unlike a full disk, trying the same batch again fails the same way, so it is not
    retried (the journal rolled it back: nothing of it is written)."""


class JournalCorruptError(JournalError):
    """Raised when the journal file is damaged or is not an ontoflow journal."""


class JournalLockedError(JournalError):
    """Raised when another process holds the journal's writer lock.

    Attributes:
        path: the journal.
        pid: the holder's process id, when it could be read.
    """

    def __init__(self, message: str, *, path: str, pid: int | None) -> None:
        super().__init__(message)
        self.path = path
        self.pid = pid


class JournalPathError(JournalError):
    """Raised when the journal's folder does not exist (the path is wrong, nothing is damaged)."""


class JournalVersionError(JournalError):
    """Raised when the journal's schema version is newer than this ontoflow understands."""
