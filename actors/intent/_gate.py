"""The confidence gate (seed 004): below its domain's threshold an intent is a question, never a guess.

The threshold is the domain manifest's ``confidence_threshold`` (0.94 by default); the
``general`` domain is exempt. The clarification lists the closest goals (the adapter's pick
and its alternatives, or every goal when nothing matched), each with its description. A goal
the catalogue does not hold (an adapter's invention, or a domain gone since a session was
gated) is nothing recognised, whatever its confidence: a question, never a crash (its
threshold was formatted from a domain that was not there, a TypeError that restarted the
Planner actor and failed every sentence it held).
"""

from __future__ import annotations

from decimal import ROUND_FLOOR, Decimal
from typing import Any

from ontoflow.actors.intent._catalogue import Catalogue
from ontoflow.protocols.domain import GATE_EXEMPT_DOMAIN, DomainOutput
from ontoflow.protocols.intent import IntentOutput

__all__ = ["MAX_CANDIDATES", "confidence_gate"]

MAX_CANDIDATES = 5


def _candidate(catalogue: Catalogue, domain: str, goal: str, confidence: float) -> dict[str, Any] | None:
    found = catalogue.find(domain, goal)
    if found is None:
        return None
    return {"domain": domain, "goal": goal, "description": found[1].description, "confidence": confidence}


def _apart(confidence: float, threshold: float) -> tuple[str, str]:
    """The figures of a refusal: the threshold as written (two decimals at least), the
    confidence cut down (never rounded up) to as many decimals. Both rounded to two decimals,
    an adapter's 0.938 under 0.94 was told "confidence 0.94, needed 0.94"."""
    needed = Decimal(repr(threshold))
    places = max(2, -needed.as_tuple().exponent)  # type: ignore[operator]  # a finite threshold (check_domain)
    step = Decimal(1).scaleb(-places)
    if not 0.0 <= confidence <= 1.0:  # an adapter's NaN or -1e300 (built in code, never checked): no quantize
        return f"{confidence:.{places}f}"[:16], str(needed.quantize(step))
    shown = Decimal(confidence).quantize(step, rounding=ROUND_FLOOR)
    return str(shown), str(needed.quantize(step))


def confidence_gate(intent: IntentOutput, catalogue: Catalogue) -> DomainOutput | None:
    """None when ``intent`` may go on; else a clarification listing the closest goals."""
    manifest = catalogue.domains.get(intent.primary_domain)
    known = bool(intent.goal) and catalogue.find(intent.primary_domain, intent.goal) is not None
    if intent.primary_domain == GATE_EXEMPT_DOMAIN and known:
        return None
    if manifest is not None and known and intent.confidence >= manifest.confidence_threshold:
        return None
    picks = [(intent.primary_domain, intent.goal, intent.confidence)] if known else []
    picks += [(a.domain, a.goal, a.confidence) for a in intent.alternatives]
    # Each goal once, at its first (best) mention: an adapter naming its pick again among its
    # alternatives listed one goal twice, "1." and "2." the same answer.
    firsts: dict[tuple[str, str], tuple[str, str, float]] = {}
    for pick in picks:
        firsts.setdefault(pick[:2], pick)
    picks = list(firsts.values())
    candidates = [c for c in (_candidate(catalogue, *p) for p in picks) if c is not None]
    if not candidates:
        candidates = [{"domain": m.domain, "goal": g.id, "description": g.description, "confidence": 0.0} for m, g in catalogue.goals()]
    candidates = candidates[:MAX_CANDIDATES]
    threshold = manifest.confidence_threshold if manifest is not None else None
    if known and threshold is not None:
        shown, needed = _apart(intent.confidence, threshold)
        why = f"I am not sure enough what you mean (confidence {shown}, needed {needed})."
    else:
        why = "I did not recognise what you want."
    return DomainOutput(
        status="clarification",
        result={"candidates": candidates},
        explanation=why + " Did you mean one of these?",
        confidence=intent.confidence,
        metadata={"resolution": "low_confidence" if known else "no_match", "threshold": threshold},
    )
