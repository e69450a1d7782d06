"""Evaluating an intent adapter on a labelled set: accuracy, per-goal precision and recall, the gate.

A labelled case is a sentence with the domain, goal and (some) entities it should give::

    - {text: "qual o preço da Nordea?", domain: finance, goal: GET_QUOTE, entities: {symbol_text: Nordea}}

A goal is right when domain and goal match; entities are right when every labelled entity
equals the predicted one (text compared case- and accent-blind). "Under the gate" counts the
predictions below their domain's threshold. ``threshold_for_full_precision`` is the lowest
confidence above every wrong prediction's: the gate that would have let no wrong goal through
on this set (and ``kept_at_that_threshold`` says how many right ones it would still let pass).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from ontoflow.protocols.intent import IntentOutput, fold

__all__ = ["EvalCase", "EvalReport", "GoalFigures", "evaluate"]


class EvalCase(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One labelled sentence."""

    text: str
    domain: str
    goal: str
    entities: dict[str, Any] = {}


class GoalFigures(msgspec.Struct, frozen=True, kw_only=True):
    """Precision and recall of one goal (``domain.GOAL``)."""

    goal: str
    support: int
    precision: float
    recall: float


class EvalReport(msgspec.Struct, frozen=True, kw_only=True):
    """The figures of one evaluation run (see the module docstring)."""

    cases: int
    goal_accuracy: float
    entity_accuracy: float
    accuracy: float
    under_gate: int
    accepted_precision: float
    threshold_for_full_precision: float
    kept_at_that_threshold: int
    per_goal: list[GoalFigures]
    mistakes: list[dict[str, Any]]


def _same(expected: Any, got: Any) -> bool:
    if isinstance(expected, str) and isinstance(got, str):
        return " ".join(fold(expected).split()) == " ".join(fold(got).split())
    if isinstance(expected, list) and isinstance(got, list):
        return len(expected) == len(got) and all(_same(e, g) for e, g in zip(expected, got, strict=True))
    return bool(expected == got)


def evaluate(cases: Sequence[EvalCase], predictions: Sequence[IntentOutput], thresholds: Mapping[str, float]) -> EvalReport:
    """Score ``predictions`` (one per case, same order) against ``cases``.

    Args:
        cases: the labelled set.
        predictions: the adapter's answers.
        thresholds: domain id -> its gate (a domain not listed: 0.94).
    """
    n = len(cases)
    goal_ok = entity_ok = both_ok = gated = 0
    accepted = accepted_ok = 0
    wrong_confidences: list[float] = []
    right_confidences: list[float] = []
    tp: dict[str, int] = {}
    predicted: dict[str, int] = {}
    support: dict[str, int] = {}
    mistakes: list[dict[str, Any]] = []
    for case, pred in zip(cases, predictions, strict=True):
        label = f"{case.domain}.{case.goal}"
        got = f"{pred.primary_domain}.{pred.goal}" if pred.goal else "(none)"
        support[label] = support.get(label, 0) + 1
        predicted[got] = predicted.get(got, 0) + 1
        g_ok = got == label
        e_ok = g_ok and all(_same(v, pred.entities.get(k)) for k, v in case.entities.items())
        goal_ok += g_ok
        entity_ok += e_ok
        both_ok += g_ok and e_ok
        if g_ok:
            tp[label] = tp.get(label, 0) + 1
            right_confidences.append(pred.confidence)
        else:
            wrong_confidences.append(pred.confidence)
        passes = bool(pred.goal) and pred.confidence >= thresholds.get(pred.primary_domain, 0.94)
        if not passes:
            gated += 1
        else:
            accepted += 1
            accepted_ok += g_ok
        if not (g_ok and e_ok):
            mistakes.append(
                {"text": case.text, "expected": label, "got": got, "confidence": pred.confidence,
                 "expected_entities": case.entities, "got_entities": pred.entities}
            )
    worst_wrong = max(wrong_confidences, default=None)
    threshold = 0.0 if worst_wrong is None else min(1.0, round(worst_wrong + 0.0001, 4))
    kept = sum(1 for c in right_confidences if c >= threshold) if threshold <= 1.0 else 0
    per_goal = [
        GoalFigures(
            goal=goal,
            support=support.get(goal, 0),
            precision=round(tp.get(goal, 0) / predicted[goal], 4) if predicted.get(goal) else 0.0,
            recall=round(tp.get(goal, 0) / support[goal], 4) if support.get(goal) else 0.0,
        )
        for goal in sorted(set(support) | {g for g in predicted if g != "(none)"})
    ]
    return EvalReport(
        cases=n,
        goal_accuracy=round(goal_ok / n, 4) if n else 0.0,
        entity_accuracy=round(entity_ok / n, 4) if n else 0.0,
        accuracy=round(both_ok / n, 4) if n else 0.0,
        under_gate=gated,
        accepted_precision=round(accepted_ok / accepted, 4) if accepted else 0.0,
        threshold_for_full_precision=threshold,
        kept_at_that_threshold=kept,
        per_goal=per_goal,
        mistakes=mistakes,
    )
