"""The catalogue: every domain manifest beside the metadata of the capabilities they name.

It is what every layer of the front half reads (the matcher builds its index from it, the
resolver and the planner look goals and capabilities up in it) and it is plain data.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from ontoflow.protocols.capability import CapabilityMetadata, IntentHints, intent_hints
from ontoflow.protocols.domain import DomainManifest, GoalSpec, check_domain
from ontoflow.protocols.errors import ManifestError, Problem
from ontoflow.protocols.intent import INTENT_PARAMS

__all__ = ["Catalogue"]


def _param_clashes(manifest: DomainManifest) -> list[Problem]:
    """Entities of one goal that would reach its capability under one input key (``param``,
    else the entity's name), or under a key the planner reserves: the resolver kept whichever
    the adapter happened to list last, or the planner overwrote it, without a word."""
    problems: list[Problem] = []
    for i, goal in enumerate(manifest.goals):
        taken: dict[str, str] = {}
        for name, spec in goal.entities_schema.items():
            key, where = spec.param or name, f"goals[{i}].entities_schema.{name}.param"
            if key in INTENT_PARAMS:
                problems.append(Problem(path=where, message=f"{key!r} is reserved for the intent's own figures"))
            elif key in taken:
                problems.append(Problem(path=where, message=f"passes as {key!r}, as entity {taken[key]!r} does "
                                                            "(one would replace the other)"))
            taken.setdefault(key, name)
    return problems


class Catalogue:
    """Domains by id and the capabilities they use.

    Args:
        domains: the domain manifests (ids unique).
        capabilities: capability id -> metadata; every capability a domain names must be here.

    Raises:
        ManifestError: two domains with one id, a domain naming a capability not loaded, or
            two entities of a goal passing as one input key (or as a reserved one).
    """

    def __init__(self, domains: Iterable[DomainManifest], capabilities: Mapping[str, CapabilityMetadata]) -> None:
        self.domains: dict[str, DomainManifest] = {}
        self.capabilities = dict(capabilities)
        problems: list[Problem] = []
        for manifest in domains:
            if manifest.domain in self.domains:
                problems.append(Problem(path="domain", message=f"domain {manifest.domain!r} is declared twice"))
                continue
            for p in [*check_domain(manifest, self.capabilities), *_param_clashes(manifest)]:
                problems.append(Problem(path=f"{manifest.domain}.{p.path}", message=p.message))
            self.domains[manifest.domain] = manifest
        if problems:
            raise ManifestError(problems, source="domain catalogue")

    def goals(self) -> Iterator[tuple[DomainManifest, GoalSpec]]:
        """Every (domain, goal), domains in id order, goals in declaration order."""
        for domain_id in sorted(self.domains):
            manifest = self.domains[domain_id]
            for goal in manifest.goals:
                yield manifest, goal

    def find(self, domain: str, goal: str) -> tuple[DomainManifest, GoalSpec] | None:
        """The domain and goal called so, or None."""
        manifest = self.domains.get(domain)
        found = manifest.goal(goal) if manifest is not None else None
        return (manifest, found) if manifest is not None and found is not None else None

    @staticmethod
    def goal_capabilities(goal: GoalSpec) -> list[str]:
        """Every capability a goal may resolve to, in first-mention order."""
        caps: list[str] = [goal.capability] if goal.capability else []
        for spec in goal.entities_schema.values():
            for target in spec.capability_map.values():
                caps.extend([target] if isinstance(target, str) else target)
        return list(dict.fromkeys(caps))

    def hints(self, goal: GoalSpec) -> IntentHints:
        """The goal's own hints joined with those of every capability it may resolve to."""
        keywords, examples = list(goal.intent_hints.keywords), list(goal.intent_hints.examples)
        for cap in self.goal_capabilities(goal):
            meta = self.capabilities.get(cap)
            if meta is not None:
                h = intent_hints(meta)
                keywords.extend(h.keywords)
                examples.extend(h.examples)
        return IntentHints(keywords=list(dict.fromkeys(keywords)), examples=list(dict.fromkeys(examples)))
