"""Type aliases shared across the protocol modules."""

from __future__ import annotations

from typing import Any, Literal

__all__ = ["CapabilityId", "JSONObject", "JSONValue", "OntologyKey", "RunStatusName", "StatusReply"]

#: A value that survives a JSON/msgpack round trip.
JSONValue = Any
#: A mapping from string keys to JSON values (a context, an input set, a schema).
JSONObject = dict[str, Any]
#: A dotted global key of the ontology, e.g. ``obdc.base.lang.code``.
OntologyKey = str
#: A dotted, globally unique capability id, e.g. ``infobim.capability.base.list_pipes``.
CapabilityId = str
#: A run's status: ``running`` until it ends ``completed``, ``failed``, ``cancelled`` or
#: ``expired`` (a question to a person nobody answered in time); ``suspended`` while it waits
#: for that answer and has nothing else to do (the one set of run statuses: engines, results
#: and the client API use it; the journal's row stays ``running`` until the run ends).
RunStatusName = Literal["running", "suspended", "completed", "failed", "cancelled", "expired"]
#: A status a client may be answered with: a run's, or ``cancelling`` (a cancel asked, not
#: yet confirmed by the worker).
StatusReply = Literal["running", "suspended", "cancelling", "completed", "failed", "cancelled", "expired"]
