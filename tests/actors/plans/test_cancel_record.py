"""A cancelled plan still names every step in its combined output, and how far each got."""

from __future__ import annotations

from ontoflow.protocols import ArrayParam, Decomposition
from ontoflow.protocols.domain import DOMAIN_OUTPUT_KEY

from ontoflow.actors.orchestrator.engine import CancelStep, RunCancelled, RunEnded, RunResumed, Suspended
from ontoflow.actors.orchestrator.plans import REPORT_KEY, STEPS_KEY

from tests.actors.plans.helpers import Driver, cap, compile_data, dispatched
from tests.actors.plans.test_suspend import _QUESTION, CAPS

FAN = cap("t.fan", "one", outputs=("got",),
          decomposition=Decomposition(array_params=[ArrayParam(param_name="many", single_param_name="one", max_concurrency=2)]))
WORK = cap("t.work", "x", outputs=("v",))


def test_cancelling_mid_fan_out_reports_every_step_in_step_order() -> None:
    steps = [
        {"id": "first", "capability": "t.work"},
        {"id": "fan", "capability": "t.fan", "params": {"many": [1, 2, 3, 4]}},
        {"id": "after", "capability": "t.work", "depends_on": ["fan"]},
        {"id": "queued", "capability": "t.work"},
    ]
    d = Driver(compile_data({"combine_mode": "report", "max_concurrency": 2, "steps": steps}, [FAN, WORK]))
    assert dispatched(d.submit()) == ["first", "fan[0]"]
    d.finish("first", outputs={"v": 1})
    d.finish("fan[0]", outputs={"got": 1})
    cmds = d.feed(RunCancelled("user", d.now))
    assert [c.step_id for c in cmds if isinstance(c, CancelStep)] == ["fan[1]", "fan[2]"]
    assert cmds[-1] == RunEnded("r1", "cancelled", "run cancelled: user")
    # Before: only "first" was named; the fan-out under way and the steps never begun were not.
    assert d.state.context[STEPS_KEY] == {"first": "succeeded", "fan": "cancelled", "after": "cancelled", "queued": "cancelled"}
    report = d.state.context[REPORT_KEY]
    assert list(report) == ["first", "fan", "after", "queued"]
    assert report["fan"]["event"] == "cancelled" and report["fan"]["error"] == "user"


def test_a_step_answered_and_waiting_for_a_slot_is_traced_cancelled() -> None:
    steps = [{"id": "resolve", "capability": "t.resolve", "params": {"t.text": "n"}}, {"id": "o1", "capability": "t.other"}]
    d = Driver(compile_data({"execution_mode": "parallel", "max_concurrency": 1, "steps": steps}, CAPS))
    d.submit()
    [asked] = [c for c in d.finish("resolve", "clarification", outputs={DOMAIN_OUTPUT_KEY: _QUESTION}) if isinstance(c, Suspended)]
    d.feed(RunResumed(asked.token, "NDA-FI.HE", d.now))
    cmds = d.feed(RunCancelled("user", d.now))
    assert [c.step_id for c in cmds if isinstance(c, CancelStep)] == ["o1"]  # nothing in flight for resolve
    assert [(t.step_id, t.event) for t in d.state.trace][-2:] == [("o1", "cancelled"), ("resolve", "cancelled")]
    assert d.state.context[STEPS_KEY] == {"resolve": "cancelled", "o1": "cancelled"}
