"""The plan engine driven fact by fact: modes, concurrency, skipping, combining."""

from __future__ import annotations

import pytest

from ontoflow.protocols import ManifestError, RetryPolicy

from ontoflow.actors.orchestrator.engine import RunEnded
from ontoflow.actors.orchestrator.plans import REPORT_KEY, STEPS_KEY

from tests.actors.plans.helpers import Driver, cap, compile_data, dispatched

CAPS = [cap("t.work", "x", "y", outputs=("v", "w"), retry=RetryPolicy(max_retries=0), timeout_ms=1000)]


def _steps(*ids, **fields):
    return [{"id": i, "capability": "t.work", **fields} for i in ids]


def test_sequential_runs_one_step_at_a_time_in_list_order() -> None:
    d = Driver(compile_data({"execution_mode": "sequential", "max_concurrency": 8, "steps": _steps("a", "b", "c")}, CAPS))
    assert dispatched(d.submit()) == ["a"]
    assert dispatched(d.finish("a")) == ["b"]
    assert dispatched(d.finish("b")) == ["c"]
    cmds = d.finish("c")
    assert cmds[-1] == RunEnded("r1", "completed", None)


def test_parallel_starts_everything_within_max_concurrency() -> None:
    d = Driver(compile_data({"execution_mode": "parallel", "max_concurrency": 2, "steps": _steps("a", "b", "c", "d", "e")}, CAPS))
    assert dispatched(d.submit()) == ["a", "b"]
    peak = len(d.in_flight)
    for sid in ["b", "a", "c", "d", "e"]:
        d.finish(sid)
        peak = max(peak, len(d.in_flight))
        assert len(d.state.running) <= 2
    assert peak == 2 and d.state.max_in_flight == 2 and d.state.status == "completed"


def test_dag_starts_a_step_as_soon_as_its_dependencies_end() -> None:
    steps = [
        {"id": "a", "capability": "t.work"},
        {"id": "b", "capability": "t.work"},
        {"id": "c", "capability": "t.work", "depends_on": ["a"]},
        {"id": "d", "capability": "t.work", "depends_on": ["a", "b"]},
    ]
    d = Driver(compile_data({"max_concurrency": 4, "steps": steps}, CAPS))
    assert dispatched(d.submit()) == ["a", "b"]
    assert dispatched(d.finish("a")) == ["c"]
    assert dispatched(d.finish("b")) == ["d"]


def test_references_resolve_nested_fields_indexes_and_text() -> None:
    steps = [
        {"id": "a", "capability": "t.work"},
        {"id": "b", "capability": "t.work", "depends_on": ["a"], "params": {"x": "${a.v.items[1].name}", "y": "got ${a.w} and ${a.v.n}"}},
    ]
    d = Driver(compile_data({"steps": steps}, CAPS))
    d.submit()
    d.finish("a", outputs={"v": {"items": [{"name": "p"}, {"name": "q"}], "n": 3}, "w": "text"})
    assert d.in_flight["b"].inputs == {"x": "q", "y": "got text and 3"}


def test_a_reference_that_does_not_resolve_ends_the_step_naming_step_and_reference() -> None:
    steps = [
        {"id": "a", "capability": "t.work"},
        {"id": "b", "capability": "t.work", "depends_on": ["a"], "params": {"x": "${a.v[5]}"}},
    ]
    d = Driver(compile_data({"steps": steps}, CAPS))
    d.submit()
    cmds = d.finish("a", outputs={"v": [1, 2]})
    b = next(t for t in d.state.trace if t.step_id == "b")
    assert b.event == "invalid" and b.reason == "reference"
    assert "step 'b'" in b.error and "${a.v[5]}" in b.error and "out of range" in b.error
    assert cmds[-1].status == "failed" and "'b'" in cmds[-1].error


def test_a_reference_to_an_undeclared_field_is_a_compile_error() -> None:
    steps = [{"id": "a", "capability": "t.work"}, {"id": "b", "capability": "t.work", "depends_on": ["a"], "params": {"x": "${a.nope}"}}]
    with pytest.raises(ManifestError) as info:
        compile_data({"steps": steps}, CAPS)
    [problem] = info.value.problems
    assert problem.path == "steps[1].params.x" and "${a.nope}" in problem.message


def test_unknown_capability_and_param_are_compile_errors() -> None:
    with pytest.raises(ManifestError) as info:
        compile_data({"steps": [{"id": "a", "capability": "t.none"}, {"id": "b", "capability": "t.work", "params": {"zz": 1}}]}, CAPS)
    assert {p.path for p in info.value.problems} == {"steps[0].capability", "steps[1].params.zz"}


def test_optional_failure_does_not_fail_the_plan_but_skips_its_dependents() -> None:
    steps = [
        {"id": "a", "capability": "t.work", "required": False},
        {"id": "b", "capability": "t.work", "depends_on": ["a"], "required": False},
        {"id": "c", "capability": "t.work"},
    ]
    d = Driver(compile_data({"steps": steps, "combine_mode": "report"}, CAPS))
    d.submit()
    d.finish("a", event="failure", error="boom")
    cmds = d.finish("c", outputs={"v": 1})
    assert cmds[-1] == RunEnded("r1", "completed", None)
    skipped = next(t for t in d.state.trace if t.step_id == "b")
    assert skipped.event == "skipped" and skipped.reason == "dependency_failed" and "dependency 'a'" in skipped.error
    assert d.state.context[STEPS_KEY] == {"a": "failed", "b": "skipped", "c": "succeeded"}


def test_a_required_failure_fails_the_plan_and_names_the_step() -> None:
    d = Driver(compile_data({"steps": _steps("a", "b")}, CAPS))
    d.submit()
    d.finish("b")
    cmds = d.finish("a", event="failure", error="bad")
    assert cmds[-1].status == "failed" and "'a'" in cmds[-1].error


@pytest.mark.parametrize("order", [["a", "b", "c"], ["c", "b", "a"], ["b", "c", "a"]])
def test_combined_output_is_in_step_order_whatever_the_arrival_order(order) -> None:
    outputs = {"a": {"v": "A", "w": "a"}, "b": {"v": "B"}, "c": {"w": "c"}}
    contexts = {}
    for mode in ("last", "merge", "report"):
        d = Driver(compile_data({"execution_mode": "parallel", "combine_mode": mode, "steps": _steps("a", "b", "c")}, CAPS))
        d.submit()
        for sid in order:
            d.finish(sid, outputs=outputs[sid])
        contexts[mode] = d.state.context
    assert contexts["last"]["w"] == "c" and "v" not in contexts["last"]
    assert contexts["merge"]["v"] == "B" and contexts["merge"]["w"] == "c"
    assert list(contexts["report"][REPORT_KEY]) == ["a", "b", "c"]
    assert contexts["report"][REPORT_KEY]["b"]["outputs"] == {"v": "B"}


def test_output_key_names_the_step_in_a_report_and_undeclared_outputs_are_dropped() -> None:
    steps = [{"id": "a", "capability": "t.work", "output_key": "primary"}]
    d = Driver(compile_data({"combine_mode": "report", "steps": steps}, CAPS))
    d.submit()
    d.finish("a", outputs={"v": 1, "secret.extra": 2})
    assert d.state.context[REPORT_KEY]["primary"]["outputs"] == {"v": 1}
    assert d.state.trace[0].dropped_outputs == ["secret.extra"]


def test_ancestor_outputs_feed_inputs_by_key_nearest_ancestor_winning() -> None:
    steps = [
        {"id": "a", "capability": "t.work"},
        {"id": "b", "capability": "t.work", "depends_on": ["a"]},
        {"id": "c", "capability": "t.work", "depends_on": ["b"]},
    ]
    d = Driver(compile_data({"steps": steps}, [cap("t.work", "v", outputs=("v",))]))
    d.submit({"v": "input"})
    assert d.in_flight["a"].inputs == {"v": "input"}
    d.finish("a", outputs={"v": "from-a"})
    d.finish("b", outputs={"v": "from-b"})
    assert d.in_flight["c"].inputs == {"v": "from-b"}


def test_missing_required_input_ends_the_step_invalid_without_dispatch() -> None:
    d = Driver(compile_data({"steps": [{"id": "a", "capability": "t.need"}]}, [cap("t.need", "k", required=("k",))]))
    cmds = d.submit()
    assert dispatched(cmds) == [] and cmds[-1].status == "failed"
    assert d.state.trace[0].event == "invalid" and "'k'" in d.state.trace[0].error
