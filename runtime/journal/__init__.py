"""The daemon's journal: an append-only record of every run's facts in SQLite (WAL).

It stores bytes: the orchestrator encodes its facts and decodes them again on replay, so this
package imports nothing of ``actors``. One :meth:`Journal.commit` is one transaction (group
commit); what it returned from is durable against a killed process. One process writes a
journal at a time (an OS lock beside it, released by the holder's death), and its files are
readable by their owner only.
"""

from ontoflow.runtime.journal._journal import (
    SCHEMA_VERSION,
    CommitBatch,
    FactRow,
    Journal,
    RunRow,
)
from ontoflow.runtime.journal._open import open_journal
from ontoflow.runtime.journal._rows import GROUP_KIND
from ontoflow.runtime.journal._readonly import ReadOnlyJournal, open_journal_readonly
from ontoflow.runtime.journal._shared import SharedJournal, open_shared_journal
from ontoflow.runtime.journal.errors import (
    JournalBatchError,
    JournalCorruptError,
    JournalError,
    JournalLockedError,
    JournalPathError,
    JournalVersionError,
)

__all__ = [
    "CommitBatch",
    "FactRow",
    "GROUP_KIND",
    "Journal",
    "JournalBatchError",
    "JournalCorruptError",
    "JournalError",
    "JournalLockedError",
    "JournalPathError",
    "JournalVersionError",
    "ReadOnlyJournal",
    "RunRow",
    "SCHEMA_VERSION",
    "SharedJournal",
    "open_journal",
    "open_journal_readonly",
    "open_shared_journal",
]
