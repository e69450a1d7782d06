"""Errors of the intent front half.

    IntentError                 root
    ├── IntentRejected          an adapter's answer breaks the catalogue's rules
    └── DomainLoadError         a domain folder cannot be loaded
"""

from __future__ import annotations

from ontoflow.protocols.errors import Problem

__all__ = ["DomainLoadError", "IntentError", "IntentRejected"]


class IntentError(Exception):
    """Raised when the front half cannot go on; the root of this package's errors."""


class IntentRejected(IntentError):
    """Raised when an intent names an unknown goal or carries entities its goal refuses.

    Attributes:
        problems: each with its path (``entities.ticker``) and what is wrong; never a value.
    """

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("intent rejected: " + "; ".join(str(p) for p in self.problems))


class DomainLoadError(IntentError):
    """Raised when a domain folder has no manifest, an invalid one, or handlers that do not load."""
