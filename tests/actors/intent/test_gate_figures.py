"""The gate's refusal states figures that show the confidence under the threshold: the
threshold as written, the confidence cut down to as many decimals, never rounded up.

Before: both were rounded to two decimals, so an adapter's 0.938 under the default 0.94 was
told "I am not sure enough what you mean (confidence 0.94, needed 0.94)"."""

from __future__ import annotations

import msgspec
import pytest

from ontoflow.actors.intent import Catalogue, confidence_gate
from ontoflow.protocols.intent import IntentOutput


def _said(catalogue, confidence: float) -> str:
    unsure = IntentOutput(primary_domain="finance", goal="GET_QUOTE", confidence=confidence, original_query="x")
    question = confidence_gate(unsure, catalogue)
    assert question is not None
    return question.explanation


@pytest.mark.parametrize(("confidence", "figures"), [
    (0.938, "confidence 0.93, needed 0.94"),
    (0.9399999, "confidence 0.93, needed 0.94"),
    (0.5, "confidence 0.50, needed 0.94"),
    (0.0, "confidence 0.00, needed 0.94"),
])
def test_the_figures_differ_as_the_numbers_do(catalogue, confidence: float, figures: str) -> None:
    assert f"({figures})" in _said(catalogue, confidence)


def test_a_threshold_of_more_decimals_is_said_with_them(catalogue) -> None:
    finance = catalogue.domains["finance"]
    sharper = msgspec.structs.replace(finance, confidence_threshold=0.955)
    changed = Catalogue([sharper, catalogue.domains["building"]], catalogue.capabilities)
    assert "(confidence 0.952, needed 0.955)" in _said(changed, 0.9522)
    assert "(confidence 0.954, needed 0.955)" in _said(changed, 0.95499999)


def test_exactly_the_threshold_passes_and_just_under_it_is_asked(catalogue) -> None:
    sure = IntentOutput(primary_domain="finance", goal="GET_QUOTE", confidence=0.94, original_query="x")
    assert confidence_gate(sure, catalogue) is None
    assert "needed 0.94" in _said(catalogue, 0.94 - 1e-12)


def test_a_goal_named_again_among_the_alternatives_is_listed_once(catalogue) -> None:
    """Before: an adapter naming its pick again as an alternative had it listed twice."""
    from ontoflow.protocols.intent import Alternative

    unsure = IntentOutput(primary_domain="finance", goal="GET_QUOTE", confidence=0.6, original_query="x", alternatives=[
        Alternative(domain="finance", goal="GET_QUOTE", confidence=0.3),
        Alternative(domain="finance", goal="TOP_MOVERS", confidence=0.2),
        Alternative(domain="finance", goal="TOP_MOVERS", confidence=0.1)])
    question = confidence_gate(unsure, catalogue)
    assert question is not None
    assert [(c["goal"], c["confidence"]) for c in question.result["candidates"]] == [("GET_QUOTE", 0.6), ("TOP_MOVERS", 0.2)]


@pytest.mark.parametrize("confidence", [float("nan"), float("-inf"), -1e300, -0.5])
def test_an_adapters_impossible_confidence_is_asked_about_not_a_crash(catalogue, confidence: float) -> None:
    """An ``IntentAdapter`` builds its answer in code (nothing checks it): the gate's figures
    must not raise on it (a raise here restarts the Planner actor, failing every sentence)."""
    assert "needed 0.94" in _said(catalogue, confidence)
