"""Errors of the intent front half.

    IntentError                 root
    ├── IntentRejected          an adapter's answer breaks the catalogue's rules
    ├── IntentAdapterFailed     an adapter could not answer (the model endpoint down, 429, 5xx)
    ├── AdapterChoiceError      an unknown adapter was chosen (``--intent-adapter``, ``[edge]``)
    └── DomainLoadError         a domain folder cannot be loaded
"""

from __future__ import annotations

from ontoflow.protocols.errors import Problem

__all__ = ["AdapterChoiceError", "DomainLoadError", "IntentAdapterFailed", "IntentError", "IntentRejected"]


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


class IntentAdapterFailed(IntentError):
    """Raised when an adapter cannot answer at all: the model endpoint is down, too slow, or
    answers 429/5xx after the capability base's retries, or refuses the request. The message
    says what failed; it never carries the sentence, the model's answer or the API key."""


class AdapterChoiceError(IntentError):
    """Raised when an adapter is chosen by a name that is not one (the key is named)."""
