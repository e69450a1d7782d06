"""Errors of the worker side of domains (seed 004's HTTP domain services).

    DomainServiceError               root: a domain service cannot be served or answered badly
    ├── DomainServiceUnavailable     down, timed out, or 5xx/429 (transient: retried)
    └── DomainServiceAnswerError     an answer that is not what the contract says (permanent)
"""

from __future__ import annotations

from ontoflow.actors.errors import PermanentError, TransientError

__all__ = ["DomainServiceAnswerError", "DomainServiceError", "DomainServiceUnavailable"]


class DomainServiceError(Exception):
    """Raised when a domain service cannot be bridged (its ``/health`` or ``/manifest``) or
    answers a step badly; the message names the URL's endpoint, never a parameter value."""


class DomainServiceUnavailable(DomainServiceError, TransientError):
    """Raised when the service does not answer, times out, or answers 5xx or 429."""


class DomainServiceAnswerError(DomainServiceError, PermanentError):
    """Raised when the service answers 4xx, or a body that is not the JSON the contract wants."""
