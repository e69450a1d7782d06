"""Errors of the planner package.

The hierarchy::

    PlannerError
    └── ConnectionResolutionError    an ``@name`` connection is not defined, or its file is unreadable

Compile problems with a pipeline are ``protocols.errors.ManifestError`` (with paths). Messages
name the connection and where it is used, never its value.
"""

from __future__ import annotations

__all__ = ["ConnectionResolutionError", "PlannerError"]


class PlannerError(Exception):
    """Raised by the planner; the root of this package's errors."""


class ConnectionResolutionError(PlannerError):
    """Raised when a ``connection: "@name"`` cannot be resolved at run time (no such name in
    the connections file nor in ``ONTOFLOW_CONNECTION_<NAME>``), or the connections file is
    unreadable."""
