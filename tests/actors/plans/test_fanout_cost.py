"""What a fan-out costs the fact that begins it: no more than its step, whatever its size.

A plan of 500 steps fanning out 1,000 elements each (a 2 MB document) held a daemon's loop
3.4 s in its first fact when a required input was missing (500,500 children ended one by one,
each traced), and 0.3 s when none was (500,000 children's inputs resolved before any ran).
"""

from __future__ import annotations

from ontoflow.protocols import ArrayParam, Decomposition

from tests.actors.plans.helpers import Driver, cap, compile_data, dispatched

QUOTE = cap("fin.quote", "symbol", "market", outputs=("price",), required=("market",),
            decomposition=Decomposition(array_params=[ArrayParam(param_name="symbols", single_param_name="symbol",
                                                                 max_concurrency=2)]))


def test_a_fan_out_whose_children_all_miss_an_input_ends_its_step_once() -> None:
    plan = {"steps": [{"id": "q", "capability": "fin.quote", "params": {"symbols": ["A"] * 1_000}}]}
    d = Driver(compile_data(plan, [QUOTE]))
    (ended,) = d.submit()
    assert ended.status == "failed" and dispatched([ended]) == []
    [entry] = d.state.trace  # before: 1,000 children ended at once, then their step
    assert (entry.step_id, entry.event, entry.reason) == ("q", "invalid", "missing_input")
    assert entry.error == ("step 'q': required input 'market' resolved to nothing (step params, run context, "
                           "defaults, schema default)")
    assert "resolved to nothing" in d.state.error and "'q'" in d.state.error


def test_a_fan_outs_children_are_resolved_as_they_are_launched() -> None:
    plan = {"steps": [{"id": "q", "capability": "fin.quote", "params": {"symbols": [f"S{i}" for i in range(1_000)],
                                                                        "market": "X"}}]}
    d = Driver(compile_data(plan, [QUOTE]))
    assert dispatched(d.submit()) == ["q[0]", "q[1]"]
    group = d.state.groups["q"]
    assert group.pending[2:5] == ["S2", "S3", "S4"]  # before: every child's inputs, made as the step began
    assert d.in_flight["q[1]"].inputs == {"symbol": "S1", "market": "X"}
    for i in range(1_000):
        d.finish(f"q[{i}]", outputs={"price": i})
    assert d.state.status == "completed" and d.state.context["price"] == list(range(1_000))
    assert d.compiled.by_id["q"].params["symbols"][:3] == ["S0", "S1", "S2"]  # the plan's own list untouched
