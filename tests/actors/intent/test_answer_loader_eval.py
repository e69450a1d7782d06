"""Reading a plan's report back as an answer; loading domain folders; the evaluation's figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from ontoflow.actors.intent import REPORT_KEY, DomainLoadError, EvalCase, answer_of, evaluate, find_domain_folders, read_domain
from ontoflow.protocols import IntentOutput

OUT = "ontoflow.domain.output"


def _record(step: str, status: str = "succeeded", outputs: dict | None = None, event: str = "success", error: str | None = None) -> dict:
    return {"step": step, "capability": f"cap.{step}", "status": status, "event": event, "outputs": outputs or {}, "error": error}


def test_answers_are_joined_in_step_order() -> None:
    report = {
        "1": _record("1", outputs={OUT: {"status": "success", "explanation": "first", "result": {"a": 1}}}),
        "2": _record("2", outputs={OUT: {"status": "success", "explanation": "second"}}),
    }
    answer = answer_of("completed", None, {REPORT_KEY: report}, ("1", "2"))
    assert (answer.status, answer.explanation) == ("success", "first\nsecond")
    assert [a["step"] for a in answer.result["answers"]] == ["1", "2"]


def test_a_clarification_anywhere_wins() -> None:
    report = {
        "1-resolve": _record("1-resolve", outputs={OUT: {"status": "clarification", "explanation": "which?", "result": {"candidates": [1, 2]}}}),
        "1": _record("1", status="failed", event="invalid", error="reference did not resolve"),
    }
    answer = answer_of("failed", "required step failed", {REPORT_KEY: report}, ("1",))
    assert answer.status == "clarification" and answer.metadata["step"] == "1-resolve"


def test_a_malformed_domain_output_or_a_failed_step_is_a_failure_that_says_where() -> None:
    report = {"1": _record("1", outputs={OUT: {"status": "maybe"}})}
    answer = answer_of("completed", None, {REPORT_KEY: report}, ("1",))
    assert answer.status == "failure" and "step '1' answered a malformed DomainOutput" in answer.explanation
    report = {"1": _record("1", status="failed", event="timeout", error="passed its deadline")}
    answer = answer_of("failed", "x", {REPORT_KEY: report}, ("1",))
    assert answer.status == "failure" and "ended with 'timeout': passed its deadline" in answer.explanation


def test_a_capability_without_domain_output_answers_with_its_outputs() -> None:
    report = {"1": _record("1", outputs={"infobim.export.rows": 12})}
    answer = answer_of("completed", None, {REPORT_KEY: report}, ("1",))
    assert answer.status == "success" and answer.result["answers"][0]["result"] == {"infobim.export.rows": 12}


def test_domain_folders_that_do_not_load_say_why(tmp_path: Path) -> None:
    with pytest.raises(DomainLoadError, match="no domain manifest"):
        read_domain(tmp_path)
    (tmp_path / "domain.yaml").write_text("domain: d\nhandlers: nowhere.py\ngoals: [{id: G, capability: c}]\ncapabilities: [c]\n")
    with pytest.raises(DomainLoadError, match="'nowhere.py' does not exist"):
        read_domain(tmp_path)
    (tmp_path / "domain.yaml").write_text("domain: [not, a, string]\ngoals: []\n")
    with pytest.raises(DomainLoadError, match="domain"):
        read_domain(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "domain.yaml").write_text("x: 1\n")
    assert find_domain_folders(tmp_path) == [tmp_path / "sub"]


def _out(goal: str, conf: float, domain: str = "d", **entities) -> IntentOutput:
    return IntentOutput(primary_domain=domain if goal else "", goal=goal, confidence=conf, entities=entities)


def test_the_evaluation_figures() -> None:
    cases = [
        EvalCase(text="a", domain="d", goal="A", entities={"x_text": "Nordea"}),
        EvalCase(text="b", domain="d", goal="A"),
        EvalCase(text="c", domain="d", goal="B"),
        EvalCase(text="d", domain="d", goal="B"),
    ]
    predictions = [_out("A", 0.99, x_text="NORDEA"), _out("A", 0.95), _out("A", 0.90), _out("", 0.0)]
    report = evaluate(cases, predictions, {"d": 0.94})
    assert (report.goal_accuracy, report.entity_accuracy, report.under_gate) == (0.5, 0.5, 2)
    assert report.accepted_precision == 1.0
    assert report.threshold_for_full_precision == 0.9001  # just above the wrong 0.90
    assert report.kept_at_that_threshold == 2
    figures = {g.goal: (g.precision, g.recall) for g in report.per_goal}
    assert figures == {"d.A": (0.6667, 1.0), "d.B": (0.0, 0.0)}
