"""A worker's connection values are its capabilities' secrets: scrubbed from every error text.

A capability may look a connection up itself (``actors.pipelines.lookup_connection``: the
worker's ``--connections`` file, ``ONTOFLOW_CONNECTION_<NAME>``), and the client it hands the
value to may quote it in an error ("the service refused key ..."). The value was in none of the
step's inputs, so the base's scrub did not know it: it left in the step's Outcome, for the
daemon's journal and its clients. The host adds every string of the connections in use, and of
those variables, to each capability's secrets (``Capability.secrets``) when it starts it.
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

from ontoflow.actors.capability import Capability
from ontoflow.actors.pipelines import ENV_PREFIX, current_connections

__all__ = ["add_connection_secrets"]

#: A string shorter than this is no secret, and redacting it would blank out words of every error.
_MIN_CHARS = 3
_MAX_DEPTH = 8  # a connection is a string or a small table, never nested deep


def add_connection_secrets(cap: Capability) -> None:
    """Add the strings of the connections in use (``current_connections``) and of the
    ``ONTOFLOW_CONNECTION_<NAME>`` variables to ``cap``'s secrets."""
    found: list[str] = []
    _strings(list(current_connections().values()), found, 0)
    for name, value in os.environ.items():
        if name.startswith(ENV_PREFIX):
            found.append(value)
            try:
                _strings(msgspec.json.decode(value), found, 0)  # a JSON object, as lookup_connection reads it
            except msgspec.DecodeError:
                pass
    known = set(cap.secrets)
    extra = tuple(dict.fromkeys(s for s in found if len(s) >= _MIN_CHARS and s not in known))
    if extra:
        cap._secrets = cap.secrets + extra


def _strings(value: Any, found: list[str], depth: int) -> None:
    if isinstance(value, str):
        found.append(value)
    elif depth < _MAX_DEPTH and isinstance(value, dict):
        _strings(list(value.values()), found, depth + 1)
    elif depth < _MAX_DEPTH and isinstance(value, list | tuple):
        for item in value:
            _strings(item, found, depth + 1)
