"""Type aliases shared across the protocol modules."""

from __future__ import annotations

from typing import Any

__all__ = ["CapabilityId", "JSONObject", "JSONValue", "OntologyKey"]

#: A value that survives a JSON/msgpack round trip.
JSONValue = Any
#: A mapping from string keys to JSON values (a context, an input set, a schema).
JSONObject = dict[str, Any]
#: A dotted global key of the ontology, e.g. ``obdc.base.lang.code``.
OntologyKey = str
#: A dotted, globally unique capability id, e.g. ``infobim.capability.base.list_pipes``.
CapabilityId = str
