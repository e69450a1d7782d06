"""Plan steps that can never run: they need a step whose capability declares no success event.

Accepted without a word before; every run skipped them (and failed, the step being required).
"""

from __future__ import annotations

from tests.actors.checker.helpers import check, kinds, meta

NEVER = meta("t.never", events=["failure"])
FINE = meta("t.fine")


def test_the_steps_behind_one_that_never_succeeds_are_reported_with_the_chain() -> None:
    doc = {"name": "p", "steps": [
        {"id": "a", "capability": "t.never"},
        {"id": "b", "capability": "t.fine", "depends_on": ["a"]},
        {"id": "c", "capability": "t.fine", "depends_on": ["b"]},
        {"id": "d", "capability": "t.fine"}]}
    report = check(doc, NEVER, FINE)
    found = {f.path: f for f in kinds(report)["unreachable"]}
    assert sorted(found) == ["steps[0].capability", "steps[1]", "steps[2]"]  # d runs: not named
    assert "every run of the plan fails" in found["steps[0].capability"].message
    assert "step 'c' never runs: it needs 'b' to succeed" in found["steps[2]"].message
    assert found["steps[2]"].counterexample == ["a (t.never) declares no success event: it never succeeds",
                                               "b needs a to succeed: skipped", "c needs b to succeed: skipped"]
    assert report.ok  # warnings: the plan still runs, as it did


def test_a_plan_whose_steps_can_all_succeed_has_no_such_finding() -> None:
    doc = {"name": "p", "steps": [{"id": "a", "capability": "t.fine"},
                                  {"id": "b", "capability": "t.fine", "depends_on": ["a"]}]}
    assert "unreachable" not in kinds(check(doc, FINE))
