"""Errors of the ``ontoflow`` command's own making (the rest are the runtime's and the protocols')::

    runtime.errors.KernelError
    └── NoAnswerError
"""

from __future__ import annotations

from ontoflow.runtime.errors import KernelError

__all__ = ["NoAnswerError"]


class NoAnswerError(KernelError):
    """Raised when the daemon does not answer a request in time (down, or refusing our key)."""
