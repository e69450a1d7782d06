"""Errors raised while validating protocol data.

The hierarchy::

    ProtocolsError
    ├── ManifestError        a workflow manifest (or plan, pipeline) is invalid; carries every Problem
    └── ProtocolError        bytes or frames on a socket are not a valid ontoflow message

Messages name the offending field by path and the value's *type*, never the value itself:
a manifest or a frame may carry secrets.
"""

from __future__ import annotations

import msgspec

__all__ = ["ManifestError", "Problem", "ProtocolError", "ProtocolsError"]


class Problem(msgspec.Struct, frozen=True, kw_only=True):
    """One thing wrong with a document: where (a dotted path) and what."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class ProtocolsError(Exception):
    """Raised when protocol data is invalid; the root of this package's errors."""


class ManifestError(ProtocolsError):
    """Raised when a manifest is invalid; ``problems`` lists every problem found, with its path."""

    def __init__(self, problems: list[Problem] | Problem, *, source: str = "") -> None:
        self.problems: list[Problem] = [problems] if isinstance(problems, Problem) else list(problems)
        self.source = source
        lines = [str(p) for p in self.problems]
        head = f"invalid manifest {source}" if source else "invalid manifest"
        super().__init__(head + ":\n  " + "\n  ".join(lines) if len(lines) > 1 else f"{head}: {lines[0]}")


class ProtocolError(ProtocolsError):
    """Raised when frames or bytes received on a socket are not a valid ontoflow message."""
