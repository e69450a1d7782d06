"""References cannot multiply a value past what a step may be sent."""

from __future__ import annotations

import pytest

from ontoflow.actors.orchestrator.plans._refs import MAX_RESOLVED_BYTES, ParamsTooLarge, substitute

from tests.actors.plans.helpers import Driver, cap, compile_data

CAPS = [cap("t.big", "n", outputs=("blob", "obj")), cap("t.eat", "x", outputs=("size",))]
_BLOB = "x" * 900_000


@pytest.mark.parametrize(
    "params",
    [
        {"x": ["${a.blob}"] * 100},              # whole references in a list
        {"x": "${a.blob}" * 10_000},             # inside one string: 9 GB if it were built
        {"x": {"deep": [{"k": "${a.obj}"}] * 100}},  # a map value in a deep map
    ],
)
def test_references_bringing_in_too_much_end_the_step_before_a_dispatch(params: dict) -> None:
    steps = [{"id": "a", "capability": "t.big"}, {"id": "b", "capability": "t.eat", "depends_on": ["a"], "params": params}]
    d = Driver(compile_data({"combine_mode": "report", "steps": steps}, CAPS))
    d.submit()
    d.finish("a", outputs={"blob": _BLOB, "obj": {"l": list(range(200_000))}})
    assert "b" not in d.in_flight  # before: a 90 MB (or bigger) Dispatch
    b = d.state.trace[-1]
    assert (b.step_id, b.event, b.reason) == ("b", "invalid", "params_too_large")
    assert "step 'b'" in b.error and "xxx" not in b.error and f"{MAX_RESOLVED_BYTES:,}" in b.error
    assert d.state.status == "failed" and "'b'" in d.state.error


def test_a_value_referenced_a_few_times_still_resolves() -> None:
    steps = [{"id": "a", "capability": "t.big"},
             {"id": "b", "capability": "t.eat", "depends_on": ["a"], "params": {"x": ["${a.blob}"] * 10}}]
    d = Driver(compile_data({"steps": steps}, CAPS))
    d.submit()
    d.finish("a", outputs={"blob": _BLOB})
    assert d.in_flight["b"].inputs["x"] == [_BLOB] * 10


def test_the_limit_is_counted_over_all_the_params_and_exactly() -> None:
    outputs = {"a": {"s": "abc", "n": [1, 2]}}
    assert substitute({"p": "${a.s}", "q": ["${a.s}"]}, "b", outputs, limit=6) == {"p": "abc", "q": ["abc"]}
    with pytest.raises(ParamsTooLarge, match="step 'b'"):
        substitute({"p": "${a.s}", "q": "-${a.s}-"}, "b", outputs, limit=5)
    assert substitute("n=${a.n}", "b", outputs, limit=5) == "n=[1,2]"


def test_a_value_json_cannot_write_ends_the_step_on_its_reference_not_the_engine() -> None:
    # A worker's msgpack may carry a map keyed by null; written into text it raised TypeError
    # out of the engine (in the daemon: "internal" and a run left running).
    steps = [{"id": "a", "capability": "t.big"},
             {"id": "b", "capability": "t.eat", "depends_on": ["a"], "params": {"x": "got ${a.obj}"}}]
    d = Driver(compile_data({"steps": steps}, CAPS))
    d.submit()
    d.finish("a", outputs={"obj": {None: "secret-ish"}})
    b = d.state.trace[-1]
    assert (b.step_id, b.event, b.reason) == ("b", "invalid", "reference")
    assert "${a.obj}" in b.error and "secret-ish" not in b.error and d.state.status == "failed"
