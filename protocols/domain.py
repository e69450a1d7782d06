"""Domains (seed 004): the domain manifest, its goals' ``entities_schema``, and ``DomainOutput``.

A domain is a manifest of goals plus the capabilities that serve them; adding one changes
nothing in the core. A goal maps to one ``capability`` or, through one enum entity's
``capability_map``, to a capability per value (a list runs several in parallel)::

    domain: finance
    capabilities: [finance.get_top_gainers, finance.get_top_losers]
    goals:
      - id: TOP_MOVERS
        entities_schema:
          direction:
            type: enum
            values: [GAINERS, LOSERS, BOTH]
            synonyms: {GAINERS: [maiores altas, gainers]}
            default: BOTH
            capability_map: {GAINERS: finance.get_top_gainers, LOSERS: finance.get_top_losers,
                             BOTH: [finance.get_top_gainers, finance.get_top_losers]}
          market_text: {type: string, description: the market as the user said it,
                        param: finance.market_text}

An entity reaches its capability under ``param`` (an ontology key; the entity's own name when
empty). A domain handler answers with a :class:`DomainOutput`, written as a map under the
output key :data:`DOMAIN_OUTPUT_KEY`. Entity values are checked by
``protocols.entities.check_entities``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

import msgspec

from ontoflow.protocols.capability import CapabilityMetadata, IntentHints
from ontoflow.protocols.errors import ManifestError, Problem
from ontoflow.protocols.patterns import PatternBudget, compile_pattern

__all__ = [
    "DEFAULT_CONFIDENCE_THRESHOLD",
    "DOMAIN_OUTPUT_KEY",
    "ENTITY_TYPES",
    "GATE_EXEMPT_DOMAIN",
    "DomainManifest",
    "DomainOutput",
    "EntitySpec",
    "GoalSpec",
    "check_domain",
    "domain_from_data",
]

#: The output key under which a domain handler writes its DomainOutput (as a map).
DOMAIN_OUTPUT_KEY = "ontoflow.domain.output"
DEFAULT_CONFIDENCE_THRESHOLD = 0.94
#: The domain the confidence gate lets through whatever the confidence (seed 004).
GATE_EXEMPT_DOMAIN = "general"
ENTITY_TYPES = ("string", "enum", "number", "boolean", "date")

_DOMAIN_ID = re.compile(r"^[a-z][a-z0-9_]*$")
_GOAL_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_ENTITY_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class DomainOutput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A domain handler's answer (seed 004).

    Attributes:
        status: ``success``, ``failure`` or ``clarification`` (a question back to the user;
            ``result.candidates`` lists the choices when there are some).
        result: the answer's data.
        explanation: one sentence for the user.
        confidence: how sure the handler is.
        metadata: extras (``resolution: ambiguous_symbol``...).
    """

    status: Literal["success", "failure", "clarification"]
    result: dict[str, Any] = {}
    explanation: str = ""
    confidence: float = 1.0
    metadata: dict[str, Any] = {}


class EntitySpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One entity of a goal's ``entities_schema``.

    Attributes:
        type: ``string``, ``enum``, ``number``, ``boolean`` or ``date`` (ISO ``YYYY-MM-DD``).
        values: the enum's values; an intent carries exactly one of them.
        synonyms: value -> words that mean it (for an enum; ``"true"``/``"false"`` for a
            boolean); a matcher reads them, the resolver never does.
        required: a goal without it (and without a default) asks for it.
        default: used when the sentence does not give it.
        description: what to ask for when it is missing.
        capability_map: enum value -> a capability id or a list of them.
        param: the input key it is passed as (the entity's name when empty).
        patterns: regular expressions with a ``value`` group that find it in a sentence,
            in RE2's syntax (``protocols.patterns``: no backreference, no lookaround).
        many: it may carry several values (a list), which the planner fans out.
    """

    type: Literal["string", "enum", "number", "boolean", "date"] = "string"
    values: list[str] = []
    synonyms: dict[str, list[str]] = {}
    required: bool = False
    default: Any = None
    description: str = ""
    capability_map: dict[str, str | list[str]] = {}
    param: str = ""
    patterns: list[str] = []
    many: bool = False


class GoalSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A business goal of a domain.

    Attributes:
        id: unique in the domain (``GET_QUOTE``).
        description: one line; a clarification lists it.
        capability: the capability when no entity has a ``capability_map``.
        entities_schema: entity name -> its spec.
        intent_hints: keywords and example sentences (beside its capabilities' own).
    """

    id: str
    description: str = ""
    capability: str = ""
    entities_schema: dict[str, EntitySpec] = {}
    intent_hints: IntentHints = IntentHints()

    @property
    def mapping_entity(self) -> str | None:
        """The entity whose ``capability_map`` chooses the capability, if any."""
        return next((n for n, e in self.entities_schema.items() if e.capability_map), None)


class DomainManifest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A domain: its goals and the capabilities that serve them.

    Attributes:
        domain: the domain id (``finance``).
        goals: its goals.
        capabilities: every capability id its goals and flows may use.
        description: one line.
        confidence_threshold: the confidence gate of this domain.
        handlers: a ``.py`` file, relative to the manifest, holding its capabilities.
    """

    domain: str
    goals: list[GoalSpec]
    capabilities: list[str] = []
    description: str = ""
    confidence_threshold: float = DEFAULT_CONFIDENCE_THRESHOLD
    handlers: str = ""

    def goal(self, goal_id: str) -> GoalSpec | None:
        """The goal called ``goal_id``, or None."""
        return next((g for g in self.goals if g.id == goal_id), None)


#: The RE2 instructions the entity patterns of one domain may compile to (a usual one takes
#: 10 to 100, and each Unicode ``\\w`` in it about 1,450: ``protocols.sentence_patterns``;
#: compiling costs about half a microsecond an instruction: ``protocols.patterns``).
MAX_DOMAIN_PATTERN_INSTRUCTIONS = 100_000


def _check_entity(where: str, name: str, spec: EntitySpec, allowed: set[str], problems: list[Problem],
                  budget: PatternBudget) -> None:
    def bad(field: str, message: str) -> None:
        problems.append(Problem(path=f"{where}.{field}" if field else where, message=message))

    if not _ENTITY_NAME.match(name):
        bad("", "an entity name is snake_case")
    if name.endswith("_text") and spec.type != "string":
        bad("type", "a *_text entity carries the user's words: its type must be string")
    if spec.type == "enum":
        if not spec.values:
            bad("values", "an enum needs values")
        if len(set(spec.values)) != len(spec.values):
            bad("values", "values repeat")
    elif spec.values:
        bad("values", "only an enum has values")
    valid_keys = set(spec.values) if spec.type == "enum" else {"true", "false"} if spec.type == "boolean" else set()
    for key in spec.synonyms:
        if key not in valid_keys:
            bad(f"synonyms.{key}", f"is not a value of this {spec.type}")
    if spec.capability_map:
        if spec.type != "enum":
            bad("capability_map", "only an enum maps values to capabilities")
        for value in spec.values:
            if value not in spec.capability_map:
                bad("capability_map", f"value {value!r} maps to no capability")
        for value, target in spec.capability_map.items():
            if value not in spec.values:
                bad(f"capability_map.{value}", "is not one of the values")
            targets = [target] if isinstance(target, str) else target
            if not targets:
                bad(f"capability_map.{value}", "maps to an empty list")
            for cap in targets:
                if cap not in allowed:
                    bad(f"capability_map.{value}", f"names {cap!r}, which is not in the domain's capabilities")
    if spec.default is not None:
        if spec.type == "enum" and spec.default not in spec.values:
            bad("default", "is not one of the values")
        elif spec.type == "boolean" and not isinstance(spec.default, bool):
            bad("default", "must be true or false")
        elif spec.type == "number" and (isinstance(spec.default, bool) or not isinstance(spec.default, int | float)):
            bad("default", "must be a number")
        elif spec.type in ("string", "date") and not isinstance(spec.default, str):
            bad("default", "must be a string")
    for i, pattern in enumerate(spec.patterns):
        if budget.left <= 0:
            bad("patterns", f"the domain's patterns take more than the {budget.instructions} RE2 instructions it may compile to")
            break
        try:
            compiled = compile_pattern(pattern, unicode=True)  # RE2: the edge matches it against clients' sentences
        except ValueError as exc:
            budget.left -= MAX_DOMAIN_PATTERN_INSTRUCTIONS // 4  # refusing costs as much as a large one
            bad(f"patterns[{i}]", f"does not compile: {exc}")
            continue
        budget.left -= compiled.programsize
        if "value" not in compiled.groupindex:
            bad(f"patterns[{i}]", "needs a group named 'value': (?P<value>...)")
    if spec.many and spec.type != "string":
        bad("many", "only a string entity carries several values")


def check_domain(manifest: DomainManifest, catalog: Mapping[str, CapabilityMetadata] | None = None) -> list[Problem]:
    """Return the problems of ``manifest`` (empty when sound).

    With ``catalog``, every capability the domain names must also be loaded.
    """
    problems: list[Problem] = []
    budget = PatternBudget(MAX_DOMAIN_PATTERN_INSTRUCTIONS)
    if not _DOMAIN_ID.match(manifest.domain):
        problems.append(Problem(path="domain", message="a domain id is lower snake_case"))
    if not 0.0 <= manifest.confidence_threshold <= 1.0:
        problems.append(Problem(path="confidence_threshold", message="must be between 0 and 1"))
    if not manifest.goals:
        problems.append(Problem(path="goals", message="a domain needs at least one goal"))
    allowed = set(manifest.capabilities)
    if catalog is not None:
        for i, cap in enumerate(manifest.capabilities):
            if cap not in catalog:
                problems.append(Problem(path=f"capabilities[{i}]", message=f"no capability {cap!r} is loaded"))
    seen: set[str] = set()
    for i, goal in enumerate(manifest.goals):
        where = f"goals[{i}]"
        if not _GOAL_ID.match(goal.id):
            problems.append(Problem(path=f"{where}.id", message="letters, digits and _, starting with a letter"))
        if goal.id in seen:
            problems.append(Problem(path=f"{where}.id", message=f"goal {goal.id!r} is declared twice"))
        seen.add(goal.id)
        mapping = [n for n, e in goal.entities_schema.items() if e.capability_map]
        if len(mapping) > 1:
            problems.append(Problem(path=f"{where}.entities_schema", message="at most one entity may have a capability_map"))
        if not mapping and not goal.capability:
            problems.append(Problem(path=f"{where}.capability", message="a goal needs a capability or an enum entity with a capability_map"))
        if goal.capability and goal.capability not in allowed:
            problems.append(Problem(path=f"{where}.capability", message=f"{goal.capability!r} is not in the domain's capabilities"))
        for name, spec in goal.entities_schema.items():
            _check_entity(f"{where}.entities_schema.{name}", name, spec, allowed, problems, budget)
    return problems


def domain_from_data(data: Any, *, source: str = "", catalog: Mapping[str, CapabilityMetadata] | None = None) -> DomainManifest:
    """Validate plain data (a decoded YAML/JSON/TOML document) as a domain manifest.

    Raises:
        ManifestError: listing every problem with its path.
    """
    if not isinstance(data, dict):
        raise ManifestError(Problem(path="", message=f"expected a map at the top level, got {type(data).__name__}"), source=source)
    try:
        manifest = msgspec.convert(data, DomainManifest)
    except msgspec.ValidationError as exc:
        message, sep, where = str(exc).rpartition(" - at `")
        if not sep:
            message, where = str(exc), "$`"
        raise ManifestError(Problem(path=where.rstrip("`")[1:].lstrip("."), message=message), source=source) from None
    problems = check_domain(manifest, catalog)
    if problems:
        raise ManifestError(problems, source=source)
    return manifest
