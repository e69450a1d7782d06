"""Errors of the drawing package.

The hierarchy::

    DrawingError
    ├── GraphvizMissingError    SVG or PNG asked for and Graphviz's ``dot`` is not on PATH
    └── RunNotFoundError        ``--run`` names a run the journal does not hold
"""

from __future__ import annotations

__all__ = ["DrawingError", "GraphvizMissingError", "RunNotFoundError"]


class DrawingError(Exception):
    """Raised when a picture cannot be made; the root of this package's errors."""


class GraphvizMissingError(DrawingError):
    """Raised when SVG or PNG is asked for and Graphviz's ``dot`` is not on PATH."""


class RunNotFoundError(DrawingError):
    """Raised when the run to overlay is not in the journal (or the journal cannot be read)."""
