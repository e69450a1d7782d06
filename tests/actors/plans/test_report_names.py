"""A report is a map by step name: names that collide are refused, a role asked twice runs once."""

from __future__ import annotations

import pytest

from ontoflow.protocols import Composition, ManifestError

from ontoflow.actors.orchestrator.engine import RunEnded

from tests.actors.plans.helpers import Driver, cap, compile_data, dispatched

WORK = cap("t.work", "x", outputs=("v",))
NOTIFY = cap("chat.send", "msg.text", outputs=("msg.id",), roles=["notifier"])
QUOTE = cap("fin.quote", "symbol", outputs=("price",), composition=Composition(followup_roles=["notifier", "notifier"]))


@pytest.mark.parametrize(
    ("steps", "path", "first"),
    [
        ([{"id": "a", "capability": "t.work", "output_key": "r"}, {"id": "b", "capability": "t.work", "output_key": "r"}],
         "steps[1].output_key", "steps[0].output_key"),
        ([{"id": "a", "capability": "t.work"}, {"id": "b", "capability": "t.work", "output_key": "a"}],
         "steps[1].output_key", "steps[0].id"),
        ([{"id": "q", "capability": "fin.quote"}, {"id": "z", "capability": "t.work", "output_key": "q+notifier"}],
         "steps[1].output_key", "steps[0].capability"),
    ],
)
def test_two_steps_of_one_report_name_are_a_compile_error_at_the_second(steps, path: str, first: str) -> None:
    # Before: the second step's record replaced the first's in ontoflow.plan.report, silently.
    with pytest.raises(ManifestError) as info:
        compile_data({"combine_mode": "report", "execution_mode": "parallel", "steps": steps}, [WORK, QUOTE, NOTIFY])
    [problem] = info.value.problems
    assert problem.path == path and first in problem.message


def test_a_role_listed_twice_is_one_follow_up_dispatched_once() -> None:
    d = Driver(compile_data({"combine_mode": "report", "steps": [{"id": "q", "capability": "fin.quote"}]}, [QUOTE, NOTIFY]))
    d.submit()
    assert dispatched(d.finish("q", outputs={"price": 1})) == ["q+notifier"]
    cmds = d.finish("q+notifier", outputs={"msg.id": 7})
    # Before: a second Dispatch of the same step id and attempt followed the first's outcome.
    assert dispatched(cmds) == [] and cmds[-1] == RunEnded("r1", "completed", None)
    assert list(d.state.context["ontoflow.plan.report"]) == ["q", "q+notifier"]


@pytest.mark.parametrize("mode", ["last", "merge"])
def test_a_shared_output_key_is_fine_where_no_report_is_made(mode: str) -> None:
    # review12: the name check refused seed 004's `output_key: primary` on two steps of a
    # `last` or `merge` plan, which name no step.
    steps = [{"id": "a", "capability": "t.work", "output_key": "primary"},
             {"id": "b", "capability": "t.work", "output_key": "primary", "depends_on": ["a"]}]
    compile_data({"combine_mode": mode, "steps": steps}, [WORK, QUOTE, NOTIFY])
