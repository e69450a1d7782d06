"""The events a step ends with: the words a transition table routes on.

A capability declares its own events (``success``, ``empty``, ``paginated``...). The runtime
itself ends a step with one of the reserved events below, so that a transition table can route
them like any other. Names starting with ``SIGNAL:`` belong to the engine.

A transition's action (``JUMP:<block>``, ``CALL:<node>``, ``RETURN``, the DSL of seed 002) is
manifest syntax: ``manifest.py`` parses it (``parse_action``).
"""

from __future__ import annotations

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
    "UNDECLARED_EVENT",
    "full_event_name",
    "is_success",
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

#: The reason of a ``failure`` a step ends with when it answered an event its capability does
#: not declare: given by the capability base for a Python capability, and by both engines for
#: any worker (one speaking the wire protocol itself could answer any text).
UNDECLARED_EVENT = "undeclared_event"

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
