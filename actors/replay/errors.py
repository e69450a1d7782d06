"""Errors of the replay package.

The hierarchy::

    ReplayError (actors.errors.ActorsError)
    ├── RunNotFoundError        the run id is not in the journal
    ├── ReplayInputError        the new document cannot stand in for the run's (another kind)
    └── PinnedSourceError       the run's pinned source is missing, damaged or changed

A document that does not parse or compile raises ``protocols.errors.ManifestError``; a journal
that cannot be opened raises ``runtime.journal.JournalError``. What a replay *finds* (a decision
that differs) is not an error: it is the answer, in :class:`~actors.replay.RunReplay`.
"""

from __future__ import annotations

from ontoflow.actors.errors import ActorsError

__all__ = ["PinnedSourceError", "ReplayError", "ReplayInputError", "RunNotFoundError"]


class ReplayError(ActorsError):
    """Raised when a replay cannot be made; the root of this package's errors."""


class RunNotFoundError(ReplayError):
    """Raised when the run id asked for is not in the journal; the message names both."""


class ReplayInputError(ReplayError):
    """Raised when a new document cannot replace the run's: another kind (a plan for a workflow)."""


class PinnedSourceError(ReplayError):
    """Raised when a run's pinned source is missing from the journal, cannot be read, is not
    stored as bytes, or is not the bytes its hash names: the run cannot be replayed or drawn.
    The message names the source's hash and what is wrong with it, never its bytes."""
