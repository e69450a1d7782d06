"""Errors of pipeline synthesis (seed 003).

The hierarchy::

    SynthesisError               a request cannot become a valid pipeline
    ├── SourceNotFoundError      the data source the request names does not exist or is not SQLite
    ├── UnknownTableError        a table the request names is not in the discovery summary
    └── UnsupportedFormatError   no writer supports the requested output format

Each message says what is missing and what would do instead; none carries a connection's
resolved value (a path the user typed may appear, a secret never does).
"""

from __future__ import annotations

__all__ = ["SourceNotFoundError", "SynthesisError", "UnknownTableError", "UnsupportedFormatError"]


class SynthesisError(ValueError):
    """Raised when a request cannot become a valid pipeline."""


class SourceNotFoundError(SynthesisError):
    """Raised when the data source a request names does not exist or is not a SQLite database."""


class UnknownTableError(SynthesisError):
    """Raised when a table the request names is not among the tables discovery found."""


class UnsupportedFormatError(SynthesisError):
    """Raised when the requested output format has no writer."""
