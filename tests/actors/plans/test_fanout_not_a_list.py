"""A fan-out parameter must be a list: a single value once vanished and the step ran without it."""

from __future__ import annotations

import pytest

from ontoflow.protocols import ArrayParam, Decomposition, ManifestError

from tests.actors.plans.helpers import Driver, cap, compile_data, dispatched

QUOTE = cap("fin.quote", "symbol", outputs=("price",),
            decomposition=Decomposition(array_params=[ArrayParam(param_name="symbols", single_param_name="symbol")]))
SOURCE = cap("t.src", outputs=("syms",))
TAKES_BOTH = cap("fin.both", "symbol", "symbols", outputs=("price",),
                 decomposition=Decomposition(array_params=[ArrayParam(param_name="symbols", single_param_name="symbol")]))


@pytest.mark.parametrize("value", ["PETR4", {"s": "PETR4"}, 7, None, "${x.syms} and more"])
def test_a_literal_that_is_not_a_list_is_a_compile_error_at_its_path(value) -> None:
    steps = [{"id": "x", "capability": "t.src"}, {"id": "q", "capability": "fin.quote", "depends_on": ["x"], "params": {"symbols": value}}]
    with pytest.raises(ManifestError) as info:
        compile_data({"steps": steps}, [QUOTE, SOURCE])
    [problem] = info.value.problems
    assert problem.path == "steps[1].params.symbols"
    assert "must be a list" in problem.message and "'symbol'" in problem.message and "PETR4" not in problem.message


def test_a_reference_that_gives_no_list_ends_the_step_invalid_without_a_dispatch() -> None:
    steps = [{"id": "x", "capability": "t.src"},
             {"id": "q", "capability": "fin.quote", "depends_on": ["x"], "params": {"symbols": "${x.syms}"}}]
    d = Driver(compile_data({"steps": steps}, [QUOTE, SOURCE]))
    d.submit()
    cmds = d.finish("x", outputs={"syms": "PETR4"})
    # Before: "q" was dispatched with no input at all.
    assert dispatched(cmds) == []
    q = d.state.trace[-1]
    assert (q.step_id, q.event, q.reason) == ("q", "invalid", "fan_out")
    assert "step 'q'" in q.error and "not a str" in q.error and "PETR4" not in q.error
    assert d.state.status == "failed"


def test_a_capability_that_also_takes_the_list_parameter_gets_a_single_value_as_is() -> None:
    d = Driver(compile_data({"steps": [{"id": "q", "capability": "fin.both", "params": {"symbols": "PETR4"}}]}, [TAKES_BOTH]))
    assert dispatched(d.submit()) == ["q"] and d.in_flight["q"].inputs == {"symbols": "PETR4"}
