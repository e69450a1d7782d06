"""The reasons the capability base gives an Outcome it decided, and the error for a result of
``execute`` it cannot turn into one."""

from __future__ import annotations

from ontoflow.protocols.events import UNDECLARED_EVENT

__all__ = [
    "REASON_ERROR",
    "REASON_INTERNAL",
    "REASON_INVALID_INPUT",
    "REASON_INVALID_RESULT",
    "REASON_TIMEOUT",
    "REASON_UNDECLARED_EVENT",
    "BadResult",
]

# Outcome reasons set by the base.
REASON_INVALID_INPUT = "invalid_input"
REASON_ERROR = "error"
REASON_TIMEOUT = "timeout"
REASON_UNDECLARED_EVENT = UNDECLARED_EVENT  # the engines give it too
REASON_INVALID_RESULT = "invalid_result"
REASON_INTERNAL = "internal"


class BadResult(Exception):
    """``execute`` returned something the base cannot turn into an Outcome."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
