"""The entity rules of seed 004, as one pure validator every adapter's answer goes through.

* an entity the goal does not declare is refused, never passed on (an adapter that "infers"
  ``ticker: NDA-SE.ST`` is caught here);
* ``*_text`` entities carry the user's words: the value must occur in the sentence (case and
  accents aside);
* enum entities carry one of the declared values exactly;
* numbers are numbers, booleans booleans, dates ISO ``YYYY-MM-DD`` strings; a ``many``
  entity may be a list of its type.

Problems name the entity and the expected type, never the value (it is the user's text).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from typing import Any

from ontoflow.protocols.domain import EntitySpec, GoalSpec
from ontoflow.protocols.errors import Problem
from ontoflow.protocols.intent import fold

__all__ = ["check_entities", "check_entity_value"]

_SPACES = re.compile(r"\s+")


def _squash(text: str) -> str:
    return _SPACES.sub(" ", fold(text)).strip()


def _check_one(name: str, spec: EntitySpec, value: Any, query: str | None) -> str | None:
    """A message when ``value`` breaks ``spec``'s rules, else None."""
    if spec.type == "enum":
        if not isinstance(value, str) or value not in spec.values:
            return f"must be exactly one of the declared values {spec.values}"
        return None
    if spec.type == "number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"must be a number, got {type(value).__name__}"
        return None
    if spec.type == "boolean":
        if not isinstance(value, bool):
            return f"must be true or false, got {type(value).__name__}"
        return None
    if not isinstance(value, str):
        return f"must be a string, got {type(value).__name__}"
    if spec.type == "date":
        try:
            datetime.date.fromisoformat(value)
        except ValueError:
            return "must be a date written YYYY-MM-DD"
        if len(value) != 10:
            return "must be a date written YYYY-MM-DD"
        return None
    if not value.strip():
        return "is empty"
    if name.endswith("_text") and query is not None and _squash(value) not in _squash(query):
        return "must carry the user's own words, and they are not in the sentence"
    return None


def check_entity_value(name: str, spec: EntitySpec, value: Any, query: str | None = None) -> str | None:
    """Check one entity's value; a message (naming no value) when it breaks the rules."""
    if spec.many and isinstance(value, list):
        if not value:
            return "is an empty list"
        for i, item in enumerate(value):
            message = _check_one(name, spec, item, query)
            if message is not None:
                return f"item {i} {message}"
        return None
    return _check_one(name, spec, value, query)


def check_entities(goal: GoalSpec, entities: Mapping[str, Any], query: str | None = None) -> list[Problem]:
    """Return every problem of ``entities`` for ``goal`` (empty when they may go on).

    Args:
        goal: the goal whose ``entities_schema`` rules.
        entities: entity name -> value, as an adapter answered.
        query: the user's sentence; when given, ``*_text`` values must occur in it.
    """
    problems: list[Problem] = []
    for name, value in entities.items():
        spec = goal.entities_schema.get(name)
        if spec is None:
            declared = ", ".join(sorted(goal.entities_schema)) or "none"
            problems.append(Problem(path=f"entities.{name}", message=f"goal {goal.id} declares no such entity (it declares: {declared})"))
            continue
        message = check_entity_value(name, spec, value, query)
        if message is not None:
            problems.append(Problem(path=f"entities.{name}", message=message))
    return problems
