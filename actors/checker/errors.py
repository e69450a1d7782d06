"""Errors of the static checker.

The hierarchy::

    CheckerError            a document cannot be checked at all (not readable, not decodable)

Findings about a document that could be read are never raised: they are the
:class:`~ontoflow.actors.checker.Report` the checker returns.
"""

from __future__ import annotations

__all__ = ["CheckerError"]


class CheckerError(Exception):
    """Raised when a document cannot be checked at all: it cannot be read or decoded."""
