"""A step may fan out over one list: a second is refused, never dropped.

Before: a capability declaring two ``decomposition.array_params`` rules got a step with a list
for each; the engine fanned out over the first and dropped the second without a word (every
child ran without it). Now the plan is refused at its path, and a list a reference brings as
the step begins ends the step ``invalid`` (``fan_out``)."""

from __future__ import annotations

import pytest

from ontoflow.protocols import ArrayParam, Decomposition, ManifestError, RetryPolicy

from ontoflow.actors.orchestrator.engine import RunEnded

from tests.actors.plans.helpers import Driver, cap, compile_data, dispatched

_RULES = [ArrayParam(param_name="t.as", single_param_name="t.a", max_concurrency=4),
          ArrayParam(param_name="t.bs", single_param_name="t.b", max_concurrency=4)]
CAPS = [cap("t.pair", "t.a", "t.b", outputs=("t.v",), retry=RetryPolicy(max_retries=0), timeout_ms=1000,
            decomposition=Decomposition(array_params=_RULES)),
        cap("t.lists", outputs=("t.list",), retry=RetryPolicy(max_retries=0), timeout_ms=1000)]


def test_two_literal_lists_are_a_compile_error_at_the_second() -> None:
    with pytest.raises(ManifestError) as caught:
        compile_data({"steps": [{"id": "r", "capability": "t.pair", "params": {"t.as": [1, 2], "t.bs": [3, 4]}}]}, CAPS)
    assert "steps[0].params.t.bs" in str(caught.value) and "one list at a time" in str(caught.value)


def test_a_second_list_from_a_reference_ends_the_step_invalid() -> None:
    steps = [{"id": "l", "capability": "t.lists"},
             {"id": "r", "capability": "t.pair", "depends_on": ["l"], "params": {"t.as": [1, 2], "t.bs": "${l.t.list}"}}]
    d = Driver(compile_data({"steps": steps}, CAPS))
    d.submit()
    cmds = d.finish("l", outputs={"t.list": [3, 4]})
    assert dispatched(cmds) == []
    r = next(t for t in d.state.trace if t.step_id == "r")
    assert (r.event, r.reason) == ("invalid", "fan_out") and "'t.as' and 't.bs'" in r.error
    assert isinstance(cmds[-1], RunEnded) and cmds[-1].status == "failed"


def test_one_list_and_one_single_value_still_fan_out() -> None:
    d = Driver(compile_data({"steps": [{"id": "r", "capability": "t.pair", "params": {"t.as": [1, 2], "t.b": 3}}]}, CAPS))
    assert dispatched(d.submit()) == ["r[0]", "r[1]"]
    assert [d.in_flight[k].inputs for k in ("r[0]", "r[1]")] == [{"t.a": 1, "t.b": 3}, {"t.a": 2, "t.b": 3}]


def test_a_second_list_the_capability_takes_as_an_input_reaches_every_child() -> None:
    """Not dropped, so not refused: the capability takes ``t.bs`` itself."""
    takes = [cap("t.pair", "t.a", "t.bs", outputs=("t.v",), retry=RetryPolicy(max_retries=0), timeout_ms=1000,
                 decomposition=Decomposition(array_params=_RULES))]
    d = Driver(compile_data({"steps": [{"id": "r", "capability": "t.pair", "params": {"t.as": [1, 2], "t.bs": [3, 4]}}]},
                            takes))
    assert dispatched(d.submit()) == ["r[0]", "r[1]"]
    assert [d.in_flight[k].inputs for k in ("r[0]", "r[1]")] == [{"t.a": 1, "t.bs": [3, 4]}, {"t.a": 2, "t.bs": [3, 4]}]
