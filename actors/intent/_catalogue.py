"""The catalogue: every domain manifest beside the metadata of the capabilities they name.

It is what every layer of the front half reads (the matcher builds its index from it, the
resolver and the planner look goals and capabilities up in it) and it is plain data.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from ontoflow.protocols.capability import CapabilityMetadata, IntentHints, intent_hints
from ontoflow.protocols.domain import DomainManifest, GoalSpec, check_domain
from ontoflow.protocols.errors import ManifestError, Problem

__all__ = ["Catalogue"]


class Catalogue:
    """Domains by id and the capabilities they use.

    Args:
        domains: the domain manifests (ids unique).
        capabilities: capability id -> metadata; every capability a domain names must be here.

    Raises:
        ManifestError: two domains with one id, or a domain naming a capability not loaded.
    """

    def __init__(self, domains: Iterable[DomainManifest], capabilities: Mapping[str, CapabilityMetadata]) -> None:
        self.domains: dict[str, DomainManifest] = {}
        self.capabilities = dict(capabilities)
        problems: list[Problem] = []
        for manifest in domains:
            if manifest.domain in self.domains:
                problems.append(Problem(path="domain", message=f"domain {manifest.domain!r} is declared twice"))
                continue
            for p in check_domain(manifest, self.capabilities):
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
