"""A fan-out is bounded: a literal list past the limit is refused at compile, a referenced one
ends its step ``invalid`` before any child is queued."""

from __future__ import annotations

import pytest

from ontoflow.actors.orchestrator.plans import MAX_FAN_OUT
from ontoflow.protocols import ArrayParam, Decomposition, ManifestError

from tests.actors.plans.helpers import Driver, cap, compile_data, dispatched

QUOTE = cap("fin.quote", "symbol", outputs=("price",),
            decomposition=Decomposition(array_params=[ArrayParam(param_name="symbols", single_param_name="symbol", max_concurrency=2)]))
LIST = cap("t.list", outputs=("symbols",))


def test_a_literal_fan_out_past_the_limit_is_refused_at_its_path() -> None:
    # A million symbols were a million children queued at once in the run's state.
    plan = {"steps": [{"id": "q", "capability": "fin.quote", "params": {"symbols": ["A"] * (MAX_FAN_OUT + 1)}}]}
    with pytest.raises(ManifestError) as caught:
        compile_data(plan, [QUOTE])
    [problem] = caught.value.problems
    assert problem.path == "steps[0].params.symbols" and f"at most {MAX_FAN_OUT:,}" in problem.message
    plan["steps"][0]["params"]["symbols"] = ["A"] * MAX_FAN_OUT
    compile_data(plan, [QUOTE])


def test_a_referenced_fan_out_past_the_limit_ends_the_step_invalid_with_no_child() -> None:
    steps = [{"id": "l", "capability": "t.list"},
             {"id": "q", "capability": "fin.quote", "depends_on": ["l"], "params": {"symbols": "${l.symbols}"}}]
    d = Driver(compile_data({"steps": steps}, [QUOTE, LIST]))
    assert dispatched(d.submit()) == ["l"]
    cmds = d.finish("l", outputs={"symbols": ["A"] * (MAX_FAN_OUT + 1)})
    assert dispatched(cmds) == []
    assert cmds[-1].status == "failed"
    [ended] = [t for t in d.state.trace if t.step_id == "q"]
    assert ended.event == "invalid" and f"at most {MAX_FAN_OUT:,}" in ended.error
