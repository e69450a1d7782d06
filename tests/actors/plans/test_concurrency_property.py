"""Whatever order outcomes arrive in: never more than max_concurrency in flight, never more
than a fan-out's own limit of its children, and the same combined output."""

from __future__ import annotations

import random

import pytest

from ontoflow.protocols import ArrayParam, Composition, Decomposition

from ontoflow.actors.orchestrator.engine import RunEnded

from tests.actors.plans.helpers import Driver, cap, compile_data

FAN = cap("t.fan", "one", outputs=("got",),
          decomposition=Decomposition(array_params=[ArrayParam(param_name="many", single_param_name="one", max_concurrency=2)]),
          composition=Composition(followup_roles=["notifier"]))
WORK = cap("t.work", "x", outputs=("v",))
NOTIFY = cap("t.notify", "x", outputs=("sent",), roles=["notifier"])
STEPS = [
    {"id": "f1", "capability": "t.fan", "params": {"many": list(range(7))}},
    {"id": "w1", "capability": "t.work"},
    {"id": "f2", "capability": "t.fan", "depends_on": ["w1"], "params": {"many": ["a", "b", "c"]}},
    {"id": "w2", "capability": "t.work", "depends_on": ["f1"], "params": {"x": "${f1.got}"}},
    {"id": "w3", "capability": "t.work"},
    {"id": "w4", "capability": "t.work", "depends_on": ["f2", "w2"], "params": {"x": "${w2.v}"}},
]


def _outputs(step_id: str, inputs: dict) -> dict:
    if step_id.startswith("f") and "+" not in step_id:
        return {"got": inputs["one"]}
    return {"sent": step_id} if "+" in step_id else {"v": [step_id, inputs.get("x")]}


def _run(seed: int, limit: int) -> dict:
    d = Driver(compile_data({"combine_mode": "report", "max_concurrency": limit, "steps": STEPS}, [FAN, WORK, NOTIFY]))
    rng = random.Random(seed)
    cmds = d.submit()
    while not (cmds and isinstance(cmds[-1], RunEnded)):
        assert 0 < len(d.state.running) <= limit
        for group in d.state.groups.values():
            assert group.running <= group.limit
        step_id = rng.choice(sorted(d.in_flight))
        cmds = d.finish(step_id, outputs=_outputs(step_id, d.in_flight[step_id].inputs))
    assert cmds[-1] == RunEnded("r1", "completed", None)
    # Four units are ready at once at the start: a bound under that is reached, so it is a real one.
    assert min(limit, 4) <= d.state.max_in_flight <= limit
    return d.state.context


@pytest.mark.parametrize("limit", [1, 2, 3, 5])
def test_bounds_hold_and_the_output_is_the_same_in_every_arrival_order(limit: int) -> None:
    first = _run(0, limit)
    for seed in range(1, 25):
        assert _run(seed, limit) == first
    report = first["ontoflow.plan.report"]
    assert report["f1"]["outputs"] == {"got": list(range(7))}
    assert report["w4"]["outputs"] == {"v": ["w4", ["w2", list(range(7))]]}
    assert list(report) == ["f1", "f1+notifier", "w1", "f2", "f2+notifier", "w2", "w3", "w4"]
