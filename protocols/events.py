"""The words of a transition table: the events a step ends with, the actions a run takes next.

A capability declares its own events (``success``, ``empty``, ``paginated``...). The runtime
itself ends a step with one of the reserved events below, so that a transition table can route
them like any other. Names starting with ``SIGNAL:`` belong to the engine.

A transition's action is the DSL of seed 002: ``JUMP:<block>``, ``CALL:<node>``, ``RETURN``
(:func:`parse_action`).
"""

from __future__ import annotations

import msgspec

__all__ = [
    "CANCELLED",
    "CLARIFICATION",
    "ENGINE_SIGNAL_PREFIX",
    "FAILURE",
    "FAIL_DEFAULT",
    "INVALID",
    "PREREQUISITE_FAILED",
    "RESERVED_EVENTS",
    "SUCCESS",
    "TIMEOUT",
    "UNAVAILABLE",
    "Action",
    "Call",
    "Jump",
    "Return",
    "full_event_name",
    "is_success",
    "parse_action",
]

SUCCESS = "success"
FAILURE = "failure"
INVALID = "invalid"
TIMEOUT = "timeout"
UNAVAILABLE = "unavailable"
CANCELLED = "cancelled"
#: A capability's ``requires`` did not succeed in this run (ours: DESIGN.md leaves the name open).
PREREQUISITE_FAILED = "prerequisite_failed"

#: A step asks a person a question (a ``DomainOutput`` with status ``clarification`` in its
#: outputs): the run is suspended until an answer resumes it or the question expires. Any
#: capability may emit it; a block may route it (taken once the answer arrived).
CLARIFICATION = "clarification"

#: Events the runtime can end any step with, whatever the capability declares.
RESERVED_EVENTS: frozenset[str] = frozenset(
    {FAILURE, INVALID, TIMEOUT, UNAVAILABLE, CANCELLED, PREREQUISITE_FAILED, CLARIFICATION}
)

ENGINE_SIGNAL_PREFIX = "SIGNAL:"
#: The fallback transition taken when no transition matches the event exactly.
FAIL_DEFAULT = "SIGNAL:FAIL_DEFAULT"


def full_event_name(capability_id: str, event: str) -> str:
    """Return the global name of ``event`` of ``capability_id`` (``<id>.<event>``)."""
    return f"{capability_id}.{event}"


def is_success(event: str) -> bool:
    """Tell whether a step that ended with ``event`` succeeded.

    Every event a capability declares counts as success (``empty`` and ``paginated`` are
    outcomes, not errors) except the reserved failure events.
    """
    return event not in RESERVED_EVENTS


# -- actions (seed 002) --------------------------------------------------------------------------


class Jump(msgspec.Struct, frozen=True):
    """Continue at another block of the current node; the return stack is unchanged."""

    block: str


class Call(msgspec.Struct, frozen=True):
    """Push the return address and enter another node at its entry block."""

    node: str


class Return(msgspec.Struct, frozen=True):
    """Pop the return address and continue there; on an empty stack the run completes."""


Action = Jump | Call | Return


def parse_action(text: str) -> Action:
    """Parse an action string.

    Raises:
        ValueError: when ``text`` is not ``JUMP:<block>``, ``CALL:<node>`` or ``RETURN``;
            the message says which form was expected.
    """
    if text == "RETURN":
        return Return()
    verb, sep, target = text.partition(":")
    if sep and target and target.strip() == target:
        if verb == "JUMP":
            return Jump(target)
        if verb == "CALL":
            return Call(target)
    raise ValueError("unknown action: expected JUMP:<block>, CALL:<node> or RETURN")
