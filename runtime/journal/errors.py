"""Errors of the journal.

The hierarchy::

    JournalError (runtime.errors.KernelError)
    ├── JournalCorruptError     the file is not an ontoflow journal SQLite can read
    └── JournalVersionError     the journal was written by a newer ontoflow

A journal is never reset silently: both errors stop the daemon with a clear message.
"""

from __future__ import annotations

from ontoflow.runtime.errors import KernelError

__all__ = ["JournalCorruptError", "JournalError", "JournalVersionError"]


class JournalError(KernelError):
    """Raised when the journal cannot be opened, read or written."""


class JournalCorruptError(JournalError):
    """Raised when the journal file is damaged or is not an ontoflow journal."""


class JournalVersionError(JournalError):
    """Raised when the journal's schema version is newer than this ontoflow understands."""
