"""Decomposition fan-out, composition follow-ups and the faults plans share with workflows."""

from __future__ import annotations

import pytest

from ontoflow.protocols import ArrayParam, Composition, Decomposition, ManifestError, RetryPolicy
from ontoflow.protocols.plan import plan_from_data

from ontoflow.actors.orchestrator.engine import CancelStep, RunCancelled, RunEnded, StepDeadlineExpired, StepLost, StepUnavailable

from tests.actors.plans.helpers import Driver, cap, compile_data, dispatched

QUOTE = cap(
    "fin.quote", "symbol", "notify", outputs=("price", "explanation"),
    decomposition=Decomposition(array_params=[ArrayParam(param_name="symbols", single_param_name="symbol", max_concurrency=2)]),
    composition=Composition(
        followup_roles=["notifier"],
        enabled_if={"path": "parameters.notify", "equals": True},
        param_map={"msg.text": {"from_parameters": ["explanation"]}},
    ),
)
NOTIFY = cap("chat.send", "msg.text", required=("msg.text",), outputs=("msg.id",), roles=["notifier"])
SUM = cap("t.sum", "prices", outputs=("total",))


def test_fan_out_is_bounded_and_gathered_in_element_order() -> None:
    steps = [
        {"id": "q", "capability": "fin.quote", "params": {"symbols": ["A", "B", "C", "D"]}},
        {"id": "s", "capability": "t.sum", "depends_on": ["q"], "params": {"prices": "${q.price}"}},
    ]
    d = Driver(compile_data({"max_concurrency": 8, "steps": steps}, [QUOTE, NOTIFY, SUM]))
    assert dispatched(d.submit()) == ["q[0]", "q[1]"]
    assert d.in_flight["q[1]"].inputs == {"symbol": "B"}
    assert dispatched(d.finish("q[1]", outputs={"price": 2})) == ["q[2]"]
    assert dispatched(d.finish("q[2]", outputs={"price": 3})) == ["q[3]"]
    assert len(d.state.running) <= 2
    d.finish("q[3]", outputs={"price": 4})
    assert dispatched(d.finish("q[0]", outputs={"price": 1})) == ["s"]
    assert d.in_flight["s"].inputs == {"prices": [1, 2, 3, 4]}
    assert d.state.trace[-1].step_id == "q" and d.state.trace[-1].event == "success"


def test_a_failed_element_fails_the_fanned_out_step() -> None:
    d = Driver(compile_data({"steps": [{"id": "q", "capability": "fin.quote", "params": {"symbols": ["A", "B"]}}]}, [QUOTE, NOTIFY]))
    d.submit()
    d.finish("q[0]", outputs={"price": 1})
    cmds = d.finish("q[1]", event="failure", error="x")
    assert cmds[-1].status == "failed"
    assert "q[1]" in d.state.trace[-1].error


def test_an_empty_list_fans_out_to_nothing_and_succeeds() -> None:
    d = Driver(compile_data({"steps": [{"id": "q", "capability": "fin.quote", "params": {"symbols": []}}]}, [QUOTE, NOTIFY]))
    cmds = d.submit()
    assert cmds == [RunEnded("r1", "completed", None)]
    assert d.state.context["price"] == []


@pytest.mark.parametrize("notify", [True, False])
def test_follow_up_is_appended_only_when_enabled(notify: bool) -> None:
    steps = [{"id": "q", "capability": "fin.quote", "params": {"symbol": "PETR4", "notify": notify}}]
    d = Driver(compile_data({"combine_mode": "report", "steps": steps}, [QUOTE, NOTIFY]))
    d.submit()
    cmds = d.finish("q", outputs={"price": 1, "explanation": "PETR4 at 1"})
    if notify:
        assert dispatched(cmds) == ["q+notifier"]
        assert d.in_flight["q+notifier"].capability == "chat.send"
        assert d.in_flight["q+notifier"].inputs == {"msg.text": "PETR4 at 1"}
        cmds = d.finish("q+notifier", outputs={"msg.id": 7})
        assert list(d.state.context["ontoflow.plan.report"]) == ["q", "q+notifier"]
    else:
        assert "q+notifier" not in d.state.context["ontoflow.plan.steps"]
    assert cmds[-1] == RunEnded("r1", "completed", None)


def test_a_role_no_capability_fills_is_a_compile_error() -> None:
    with pytest.raises(ManifestError) as info:
        compile_data({"steps": [{"id": "q", "capability": "fin.quote"}]}, [QUOTE])
    assert info.value.problems[0].path == "steps[0].capability" and "notifier" in info.value.problems[0].message


SLOW = cap("t.slow", outputs=("v",), retry=RetryPolicy(max_retries=0), timeout_ms=100)
SAFE = cap("t.safe", outputs=("v",), retry=RetryPolicy(max_retries=0), timeout_ms=100, idempotent=True)


def _two(caps_id: str) -> Driver:
    steps = [{"id": "a", "capability": caps_id, "required": False}, {"id": "b", "capability": caps_id}]
    return Driver(compile_data({"execution_mode": "parallel", "steps": steps}, [SLOW, SAFE]))


def test_deadline_cancels_the_attempt_and_times_the_step_out() -> None:
    d = _two("t.slow")
    d.submit()
    cmds = d.feed(StepDeadlineExpired("a", 1, d.now))
    assert cmds == [CancelStep("r1", "a", 1)]
    assert d.state.trace[0].event == "timeout" and d.state.trace[0].reason == "deadline"


def test_unavailable_ends_the_step() -> None:
    d = _two("t.slow")
    d.submit()
    cmds = d.feed(StepUnavailable("b", 1, d.now))
    assert d.state.trace[0].event == "unavailable"
    d.finish("a")
    assert d.state.status == "failed" and "'b'" in d.state.error
    del cmds


def test_lost_idempotent_step_is_dispatched_again_and_stale_answers_ignored() -> None:
    d = _two("t.safe")
    d.submit()
    [again] = d.feed(StepLost("a", 1, "worker_lost", d.now))
    assert again.step_id == "a" and again.attempt == 2 and again.deadline_at_ms is not None
    d.finish("b")
    assert d.feed(StepDeadlineExpired("a", 1, d.now)) == []  # about attempt 1: stale
    assert any("stale" in n for n in d.state.notes)
    d.finish("a")
    assert d.state.status == "completed"


def test_lost_step_that_is_not_idempotent_fails() -> None:
    d = _two("t.slow")
    d.submit()
    assert d.feed(StepLost("b", 1, "worker_lost", d.now)) == []
    assert d.state.trace[0].event == "failure" and d.state.trace[0].reason == "worker_lost"


def test_cancel_cancels_every_running_step() -> None:
    d = _two("t.slow")
    d.submit()
    cmds = d.feed(RunCancelled("user", d.now))
    assert cmds[:2] == [CancelStep("r1", "a", 1), CancelStep("r1", "b", 1)]
    assert cmds[-1] == RunEnded("r1", "cancelled", "run cancelled: user")
    assert {t.event for t in d.state.trace} == {"cancelled"}
    assert d.feed(RunCancelled("again", d.now)) == []


def test_replaying_the_facts_gives_the_same_state() -> None:
    steps = [{"id": "q", "capability": "fin.quote", "params": {"symbols": ["A", "B", "C"], "notify": True}}]
    compiled = compile_data({"steps": steps}, [QUOTE, NOTIFY])
    d = Driver(compiled)
    facts = []
    original = d.feed
    d.feed = lambda fact: (facts.append(fact), original(fact))[1]  # type: ignore[method-assign]
    d.submit()
    for sid in ["q[1]", "q[0]", "q[2]"]:
        d.finish(sid, outputs={"price": sid, "explanation": sid})
    d.finish("q+notifier", outputs={"msg.id": 1})
    replay = compiled.new_run("r1")
    for fact in facts:
        compiled.advance(replay, fact)
    assert replay.context == d.state.context and replay.trace == d.state.trace and replay.status == "completed"
    assert plan_from_data({"steps": steps}).steps[0].params["symbols"] == ["A", "B", "C"]


def test_an_event_the_capability_does_not_declare_ends_a_plan_step_failure_without_quoting_it() -> None:
    # As the workflow engine (tests/actors/engine/test_faults.py): a worker speaking the wire
    # protocol itself may answer any text; it must not count as the step's success.
    d = Driver(compile_data({"steps": [{"id": "s", "capability": "t.sum", "params": {"prices": [1]}}]}, [SUM]))
    d.submit()
    cmds = d.finish("s", event="sucess-token=hunter2", outputs={"total": 1})
    assert cmds[-1].status == "failed"
    entry = d.state.trace[-1]
    assert (entry.event, entry.reason, entry.dropped_outputs) == ("failure", "undeclared_event", ["total"])
    assert "hunter2" not in repr(d.state)
