"""Defaults of a capability's instance state: what the base uses when ``__init__`` did not set
it, and the answer-size bound a worker host gives its capabilities."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ontoflow.actors.capability._base import Capability

__all__ = ["RESULT_MARGIN_BYTES", "OnFirstUse", "result_bytes_for"]

#: Room left in a message for the rest of an Outcome (ids, event, error, timings).
RESULT_MARGIN_BYTES = 64 * 1024


def result_bytes_for(max_message_bytes: int) -> int:
    """The most a step's outputs and segments may take encoded on a host whose messages are at
    most ``max_message_bytes``: the rest of the Outcome must fit too (half the message when
    the limit is smaller than the margin)."""
    return max(max_message_bytes - RESULT_MARGIN_BYTES, max_message_bytes // 2)


class OnFirstUse:
    """A default of a capability's instance state that ``__init__`` sets, made on first use
    and kept in the instance, for a subclass whose ``__init__`` forgot ``super().__init__()``
    (every step of it failed as the base's internal error).

    A non-data descriptor: what ``__init__`` set in the instance wins, so a well-made
    capability never calls it. (A ``__getattr__`` and plain class attributes did this before,
    and cost ``invoke`` about 6% more instructions: a shared ``Random`` as a class attribute
    alone cost 4,500 per step.)
    """

    def __init__(self, make: Callable[[type[Capability]], Any]) -> None:
        self._make = make
        self._name = ""

    def __set_name__(self, owner: type[Capability], name: str) -> None:
        self._name = name

    def __get__(self, instance: Capability | None, owner: type[Capability]) -> Any:
        if instance is None:
            return self
        value = instance.__dict__[self._name] = self._make(owner)
        return value
