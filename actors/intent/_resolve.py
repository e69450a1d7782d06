"""The goal resolver (seed 004): a pure function from an ``IntentOutput`` to ``ExecutionIntent`` s.

The capability comes from the goal alone: its ``capability``, or the ``capability_map`` of
its one mapping enum, read at the entity's value, else its declared ``default``, else its
first value (the seed's fallback). A value mapped to a list gives one intent per capability,
run in parallel. Entities are checked first (an undeclared one, a wrong type, an enum value
not declared, a ``*_text`` value not in the sentence: :class:`IntentRejected`); defaults are
filled in; a required entity still missing gives a clarification asking for it by its
description. Entities travel as parameters under their ``param`` keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ontoflow.actors.intent._catalogue import Catalogue
from ontoflow.actors.intent.errors import IntentRejected
from ontoflow.protocols.domain import DomainOutput, GoalSpec
from ontoflow.protocols.entities import check_entities
from ontoflow.protocols.errors import Problem
from ontoflow.protocols.intent import INTENT_PARAMS, ExecutionIntent, IntentOutput

__all__ = ["Resolution", "resolve_goal"]


@dataclass(frozen=True, slots=True)
class Resolution:
    """What the resolver decided: intents to plan, or a question back to the user.

    Attributes:
        intents: one per capability, in capability_map order.
        entities: the entities with defaults filled in (entity name -> value).
        clarification: set when a required entity is missing (then ``intents`` is empty).
    """

    intents: list[ExecutionIntent] = field(default_factory=list)
    entities: dict[str, Any] = field(default_factory=dict)
    clarification: DomainOutput | None = None


def _parameters(goal: GoalSpec, entities: dict[str, Any]) -> dict[str, Any]:
    """The entities under their ``param`` keys.

    Raises:
        IntentRejected: two of them pass as one key (the one the adapter listed last was kept,
            the other dropped without a word), or one as a key the planner reserves (which
            overwrote it); the goal is misdeclared, and the problem names its entities.
    """
    parameters: dict[str, Any] = {}
    given: dict[str, str] = {}
    for name, value in entities.items():
        key = goal.entities_schema[name].param or name
        if key in INTENT_PARAMS or key in given:
            why = "a key the planner reserves" if key in INTENT_PARAMS else f"the key entity {given[key]!r} passes as"
            raise IntentRejected([Problem(path=f"entities.{name}", message=(
                f"goal {goal.id} passes it as {why} ({key!r}): fix the goal's entities_schema params"))])
        given[key] = name
        parameters[key] = value
    return parameters


def resolve_goal(intent: IntentOutput, catalogue: Catalogue, *, said: str | None = None) -> Resolution:
    """Resolve ``intent`` against the catalogue.

    Args:
        intent: the adapter's answer (after the gate and memory injection).
        catalogue: the domains and capabilities.
        said: the user's words ``*_text`` values must come from (``original_query`` when None;
            with memory, the earlier sentences too).

    Raises:
        IntentRejected: an unknown domain or goal, entities the goal refuses, or two entities
            given that the goal passes as one key.
    """
    found = catalogue.find(intent.primary_domain, intent.goal)
    if found is None:
        domain = catalogue.domains.get(intent.primary_domain)
        where = "primary_domain" if domain is None else "goal"
        known = sorted(catalogue.domains) if domain is None else [g.id for g in domain.goals]
        raise IntentRejected([Problem(path=where, message=f"is not in the catalogue (known: {', '.join(known) or 'none'})")])
    manifest, goal = found
    problems = check_entities(goal, intent.entities, said if said is not None else intent.original_query)
    if problems:
        raise IntentRejected(problems)
    entities = dict(intent.entities)
    for name, spec in goal.entities_schema.items():
        if name not in entities and spec.default is not None:
            entities[name] = spec.default
    mapping = goal.mapping_entity
    missing = [
        (name, spec) for name, spec in goal.entities_schema.items()
        if spec.required and name not in entities and name != mapping
    ]
    if missing:
        asked = [{"entity": n, "description": s.description or n} for n, s in missing]
        wanted = "; ".join(a["description"] for a in asked)
        return Resolution(
            entities=entities,
            clarification=DomainOutput(
                status="clarification",
                result={"domain": manifest.domain, "goal": goal.id, "missing": asked},
                explanation=f"To {goal.description or goal.id} I need: {wanted}.",
                confidence=intent.confidence,
                metadata={"resolution": "missing_entity"},
            ),
        )
    if mapping is not None:
        spec = goal.entities_schema[mapping]
        value = entities.get(mapping, spec.values[0])
        target = spec.capability_map[value]
        # Each capability once: a value mapped to [a, a] ran ``a`` twice and answered it twice.
        capabilities = [target] if isinstance(target, str) else list(dict.fromkeys(target))
    else:
        capabilities = [goal.capability]
    parameters = _parameters(goal, entities)
    intents = [
        ExecutionIntent(
            domain=manifest.domain, capability=cap, parameters=dict(parameters),
            confidence=intent.confidence, original_query=intent.original_query,
        )
        for cap in capabilities
    ]
    return Resolution(intents=intents, entities=entities)
