"""A ``capability_map`` value naming one capability twice resolves to it once.

Before: ``BOTH: [c.gainers, c.gainers, c.losers]`` gave three intents, so the plan ran
``c.gainers`` twice and the answer said its result twice."""

from __future__ import annotations

from ontoflow.actors.intent import Catalogue, resolve_goal
from ontoflow.protocols import CapabilityMetadata
from ontoflow.protocols.domain import domain_from_data
from ontoflow.protocols.intent import IntentOutput


def test_each_capability_of_a_mapped_list_is_resolved_once() -> None:
    caps = {c: CapabilityMetadata(id=c) for c in ("c.gainers", "c.losers")}
    domain = domain_from_data({"domain": "c", "capabilities": list(caps), "goals": [{"id": "MOVERS", "entities_schema": {
        "direction": {"type": "enum", "values": ["UP", "BOTH"], "default": "BOTH",
                      "capability_map": {"UP": "c.gainers", "BOTH": ["c.gainers", "c.gainers", "c.losers"]}}}}]})
    intent = IntentOutput(primary_domain="c", goal="MOVERS", confidence=1.0, original_query="movers")
    resolution = resolve_goal(intent, Catalogue([domain], caps))
    assert [i.capability for i in resolution.intents] == ["c.gainers", "c.losers"]
