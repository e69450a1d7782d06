"""The inputs of a step as they were sent, for every attempt of it (seed 001's retries).

Each attempt of ``execute`` gets a fresh dict of the validated inputs, but the values in it
are the same objects: a capability that appended to a list it was given, then raised a
transient error, saw its own append on the retry (and a third attempt saw two). A step whose
values are all immutable (strings, numbers, booleans, None: most steps) needs nothing more
than that dict (``plain_keys`` tells them by their keys). One holding a list, a map or
anything else is encoded once before its first attempt, when it may be retried, and decoded
afresh for each retry: no copy on the path of a
step that is not retried, and no deep copy for what came over the wire. A retry gets the values
as the wire carries them: a tuple or a set handed in code (never sent so) comes back a list; a
value msgpack cannot carry at all is deep-copied instead.
"""

from __future__ import annotations

import copy
from typing import Any

import msgspec

__all__ = ["SentInputs", "keep_sent", "plain_keys", "plain_required"]

# What an attempt cannot change in place; anything else may be mutated and is kept encoded.
_IMMUTABLE = frozenset({str, int, float, bool, type(None), bytes})
# JSON Schema types whose every valid value is one of those (the validator checks them first).
_SCALAR_TYPES = frozenset({"string", "integer", "number", "boolean", "null"})

# Reused: a fresh Encoder per call is the slow path msgspec warns about.
_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder()


class SentInputs:
    """The validated inputs of a step, kept so every retry gets them as they were sent."""

    __slots__ = ("_copied", "_encoded")

    def __init__(self, inputs: dict[str, Any]) -> None:
        self._copied: dict[str, Any] = {}
        try:
            # Encoding is the whole cost until a retry (a few microseconds for a list of twenty
            # maps): no decoding, no comparing.
            self._encoded: bytes | None = _ENCODER.encode(inputs)
        except Exception:  # noqa: BLE001 - a value msgpack cannot carry (handed in code, not over the wire)
            self._encoded = None
            self._copied = _deep_copy(inputs)

    def fresh(self) -> dict[str, Any]:
        """A new copy of the inputs as sent, for the next attempt."""
        if self._encoded is not None:
            decoded: dict[str, Any] = _DECODER.decode(self._encoded)
            return decoded
        return _deep_copy(self._copied)


def plain_keys(schema: Any, *, retried: bool) -> frozenset[str] | None:
    """The input keys whose valid values are all immutable (a ``type`` of strings, numbers,
    booleans or null), or ``None`` when no step of the capability needs its inputs kept: it
    is never retried, or its schema admits no other key (``additionalProperties: false``).

    A step whose inputs all have plain keys (``plain_keys(...).issuperset(inputs)``: one C
    call, where looking at every value costs a step about twice as much) keeps nothing.

    Args:
        schema: the capability's ``input_schema``.
        retried: whether its retry policy allows a second attempt.
    """
    if not retried:
        return None
    if isinstance(schema, dict) and "$ref" in schema:
        return frozenset()  # draft-07 ignores a $ref's siblings: ``properties`` then bind no value
    properties = schema.get("properties") if isinstance(schema, dict) else None
    properties = properties if isinstance(properties, dict) else {}
    plain = frozenset(key for key, sub in properties.items() if _scalar(sub))
    if isinstance(schema, dict) and schema.get("additionalProperties") is False and len(plain) == len(properties):
        return None
    return plain


def plain_required(schema: Any, plain: frozenset[str] | None) -> int:
    """How many keys the schema requires when every one of them is plain (in ``plain``), else
    -1: a step's valid inputs hold each required key, so inputs of exactly that many keys
    are those keys and all plain (``len``, where ``plain.issuperset`` builds a set of the
    inputs' keys each step: most steps are sent exactly their required inputs).

    Args:
        schema: the capability's ``input_schema``.
        plain: what ``plain_keys`` returned for it.
    """
    if plain is None or not isinstance(schema, dict) or "$ref" in schema:  # draft-07 ignores a $ref's siblings
        return -1
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(k, str) and k in plain for k in required):
        return -1
    return len(set(required))


def _scalar(sub: Any) -> bool:
    if not isinstance(sub, dict) or "$ref" in sub:  # draft-07 ignores the siblings of a $ref
        return False
    kind = sub.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    return bool(kinds) and all(isinstance(k, str) and k in _SCALAR_TYPES for k in kinds)


def keep_sent(inputs: dict[str, Any]) -> SentInputs | None:
    """The inputs kept for the retries of a step, or ``None`` when a shallow copy per attempt
    already gives each attempt the inputs as sent (every value immutable).

    Args:
        inputs: the validated inputs, before the first attempt.
    """
    for value in inputs.values():
        if type(value) not in _IMMUTABLE:
            return SentInputs(inputs)
    return None


def _deep_copy(inputs: dict[str, Any]) -> dict[str, Any]:
    try:
        return copy.deepcopy(inputs)
    except Exception:  # noqa: BLE001 - an object that cannot be copied is handed as it is
        return dict(inputs)
