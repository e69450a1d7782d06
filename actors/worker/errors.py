"""Errors of the worker host: a capability that cannot start for good, and the worker side of
domains (seed 004's HTTP domain services).

    CapabilityInitError (actors.errors)
    └── PermanentInitError           a constructor raised, or initialize() with a permanent error
    DomainServiceError               root: a domain service cannot be served or answered badly
    ├── DomainServiceUnavailable     down, timed out, or 5xx/429 (transient: retried)
    └── DomainServiceAnswerError     an answer that is not what the contract says (permanent)
"""

from __future__ import annotations

from ontoflow.actors.errors import CapabilityInitError, PermanentError, TransientError

__all__ = ["DomainServiceAnswerError", "DomainServiceError", "DomainServiceUnavailable", "PermanentInitError"]


class PermanentInitError(CapabilityInitError):
    """Raised when a capability cannot start and starting it again would fail the same way: its
    constructor raised, or its ``initialize()`` raised an error ``classify_error`` does not call
    transient (a ``ConnectionError``, a ``TransientError``, a timeout are transient: a worker
    process that exits on one is restarted). The message is a ``CapabilityInitError``'s."""


class DomainServiceError(Exception):
    """Raised when a domain service cannot be bridged (its ``/health`` or ``/manifest``) or
    answers a step badly; the message names the URL's endpoint, never a parameter value."""


class DomainServiceUnavailable(DomainServiceError, TransientError):
    """Raised when the service does not answer, times out, or answers 5xx or 429."""


class DomainServiceAnswerError(DomainServiceError, PermanentError):
    """Raised when the service answers 4xx, or a body that is not the JSON the contract wants."""
