"""Errors of the actors package.

The hierarchy::

    ActorsError
    ├── CapabilityDefinitionError    a Capability subclass is malformed (no metadata, a schema
    │                                that does not compile)
    ├── CapabilityInitError          a capability's initialize() raised: its worker cannot start
    ├── WorkerRefusedError           the orchestrator sent Disconnect (wrong protocol, bad announcement)
    └── StepError                    raised by capability code to say how to treat a failure
        ├── TransientError           worth retrying (rate limit, a flaky upstream)
        └── PermanentError           retrying cannot help (bad credentials, a missing record)

Messages name the capability id and the offending key, never a parameter value or a secret.
Loading errors use ``runtime.errors.CapabilityLoadError``, which names the spec.
"""

from __future__ import annotations

__all__ = [
    "ActorsError",
    "CapabilityDefinitionError",
    "CapabilityInitError",
    "PermanentError",
    "StepError",
    "TransientError",
    "WorkerRefusedError",
]


class ActorsError(Exception):
    """Raised by the actors package; the root of this package's errors."""


class CapabilityDefinitionError(ActorsError):
    """Raised when a Capability subclass has no ``metadata`` or its ``input_schema`` does not
    compile; the message names the capability id."""


class CapabilityInitError(ActorsError):
    """Raised by a worker host when a capability's ``initialize()`` raises, or has not returned
    within the host's ``init_timeout_s``; the message names the capability and the error's type
    and text scrubbed of credentials (a connection URL's password, a token), or the bound, so a
    worker can print it; the original, if any, is its ``__cause__``."""


class WorkerRefusedError(ActorsError):
    """Raised when the orchestrator answers a worker host with ``Disconnect``; the message is
    the orchestrator's reason."""


class StepError(ActorsError):
    """Raised by a capability's ``execute`` to classify its failure explicitly (seed 001)."""


class TransientError(StepError):
    """Raised when a failure is temporary: the capability base retries it with backoff."""


class PermanentError(StepError):
    """Raised when a failure cannot go away by retrying: the capability base does not retry."""
