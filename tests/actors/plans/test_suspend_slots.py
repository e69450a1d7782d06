"""An answered plan step waits for a slot like any other: max_concurrency holds across questions."""

from __future__ import annotations

from ontoflow.protocols.domain import DOMAIN_OUTPUT_KEY

from ontoflow.actors.orchestrator.engine import ANSWER_KEY, Dispatch, RunEnded, RunResumed, Suspended

from tests.actors.plans.helpers import Driver, compile_data, dispatched
from tests.actors.plans.test_suspend import _QUESTION, CAPS

_STEPS = [
    {"id": "resolve", "capability": "t.resolve", "params": {"t.text": "nordea"}},
    {"id": "o1", "capability": "t.other"},
    {"id": "o2", "capability": "t.other"},
]


def test_an_answer_with_every_slot_taken_waits_for_one_then_goes_first_in_step_order() -> None:
    d = Driver(compile_data({"execution_mode": "parallel", "max_concurrency": 1, "steps": _STEPS}, CAPS))
    assert dispatched(d.submit()) == ["resolve"]
    cmds = d.finish("resolve", "clarification", outputs={DOMAIN_OUTPUT_KEY: _QUESTION})
    [asked] = [c for c in cmds if isinstance(c, Suspended)]
    assert dispatched(cmds) == ["o1"]  # the asking step's slot went to the next step
    # Before: the answer dispatched "resolve" at once, two steps in flight under max_concurrency 1.
    assert d.feed(RunResumed(asked.token, "NDA-FI.HE", d.now)) == []
    assert list(d.state.running) == ["o1"] and d.state.status == "running"
    [again] = [c for c in d.finish("o1", outputs={"t.other": 1}) if isinstance(c, Dispatch)]
    assert (again.step_id, again.attempt, again.inputs[ANSWER_KEY]) == ("resolve", 2, "NDA-FI.HE")
    assert dispatched(d.finish("resolve", outputs={"t.symbol": "NDA-FI.HE"})) == ["o2"]
    assert d.finish("o2", outputs={"t.other": 2})[-1] == RunEnded("r1", "completed", None)
    assert d.state.max_in_flight == 1
    resolve = [t for t in d.state.trace if t.step_id == "resolve"]
    assert [t.attempt for t in resolve] == [1, 2] and resolve[1].started_ms == resolve[0].started_ms
