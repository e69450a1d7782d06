"""Comparing a provided value, or a declared input's schema, with a consumer's schema.

Literal values (block params, static memory) are validated with the same JSON Schema validator
the capability base uses, compiled once per schema. A declared input contradicts a consumer
when their ``type`` sets cannot overlap (``integer`` is a ``number``) or when a value of its
``enum`` is one the consumer's schema refuses. Messages name the rule, never the value.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import fastjsonschema
import msgspec

from ontoflow.runtime.regex_schema import compile_schema

__all__ = ["declared_contradiction", "literal_problem"]

_encode = msgspec.json.Encoder(order="deterministic").encode

#: The compiled validators kept, most recently used first out last: one per distinct schema, and
#: a daemon checks every client's document against every worker's announced schemas, so the
#: cache was a dict that only grew (a client submitting documents of ever new literal schemas,
#: or workers announcing them, kept every compiled validator for the daemon's life).
CACHED_VALIDATORS = 1_024


@functools.lru_cache(maxsize=CACHED_VALIDATORS)
def _compiled(key: bytes) -> Callable[[Any], Any] | None:
    try:
        return compile_schema(msgspec.json.decode(key))  # its patterns by RE2: the daemon checks clients' documents
    except (fastjsonschema.JsonSchemaDefinitionException, TypeError, ValueError):
        return None  # a broken schema is the capability's own problem


def _validator(schema: dict[str, Any]) -> Callable[[Any], Any] | None:
    try:
        key = _encode(schema)
    except (TypeError, ValueError):  # not JSON (a schema built in code with a set in it): not checked
        return None
    return _compiled(key)


def literal_problem(value: Any, schema: dict[str, Any]) -> str | None:
    """The rule ``value`` breaks in ``schema`` (``must be integer``), or ``None``."""
    check = _validator(schema)
    if check is None:
        return None
    try:
        check(value)
    except fastjsonschema.JsonSchemaValueException as exc:
        return exc.message.removeprefix("data ").removeprefix("data.")
    return None


def _types(schema: dict[str, Any]) -> set[str] | None:
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list) and all(isinstance(k, str) for k in kind):
        return set(kind)
    return None


def declared_contradiction(provided: dict[str, Any], consumer: dict[str, Any]) -> str | None:
    """Why a value of schema ``provided`` can never (or not always) satisfy ``consumer``."""
    mine, theirs = _types(provided), _types(consumer)
    if mine is not None and theirs is not None:
        widened = theirs | ({"integer"} if "number" in theirs else set())
        if not mine & widened:
            return f"declared as {'/'.join(sorted(mine))}, the consumer takes {'/'.join(sorted(theirs))}"
    enum = provided.get("enum")
    if isinstance(enum, list):
        refused = [v for v in enum if literal_problem(v, consumer) is not None]
        if refused:
            shown = ", ".join(repr(v) for v in refused[:5])
            return f"its enum has value(s) the consumer refuses: {shown}"
    return None
