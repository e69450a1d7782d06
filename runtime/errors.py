"""Errors of the runtime kernel.

The hierarchy::

    KernelError
    ├── ActorDeadError               an actor is stopped; a tell/ask cannot be delivered
    ├── RestartIntensityExceeded     a supervisor's children crashed too often; it gives up
    ├── TransportError               a socket could not be bound, connected or configured
    ├── ConfigError                  a command-line or config value is invalid
    └── CapabilityLoadError          a capability module or file could not be loaded

anyio's own resource errors (``ClosedResourceError``, ``BrokenResourceError``,
``WouldBlock``, ``EndOfStream``) are reused as they are.
"""

from __future__ import annotations

__all__ = [
    "ActorDeadError",
    "CapabilityLoadError",
    "ConfigError",
    "KernelError",
    "RestartIntensityExceeded",
    "TransportError",
]


class KernelError(Exception):
    """Raised by the runtime kernel; the root of this package's errors."""


class ActorDeadError(KernelError):
    """Raised when a message is sent to, or a reply awaited from, an actor that has stopped."""


class RestartIntensityExceeded(KernelError):
    """Raised when a supervisor's children crashed more than its intensity allows."""


class TransportError(KernelError):
    """Raised when a socket cannot be bound, connected or configured (the address is named)."""


class ConfigError(KernelError):
    """Raised when a command-line option or a configuration value is invalid."""


class CapabilityLoadError(KernelError):
    """Raised when a capability module or ``.py`` file cannot be imported or holds none."""
