"""Suspension in the workflow engine: a step asks, an answer resumes it, a question expires."""

from __future__ import annotations

from typing import Any

import msgspec

from ontoflow.protocols import RetryPolicy
from ontoflow.protocols.domain import DOMAIN_OUTPUT_KEY

from ontoflow.actors.orchestrator.engine import (
    ANSWER_KEY,
    CancelStep,
    Dispatch,
    RunCancelled,
    RunEnded,
    RunExpired,
    RunResumed,
    StepDeadlineExpired,
    Suspended,
    advance,
    new_run,
    token_of,
)

from tests.actors.engine.helpers import Driver, block, cap, compile_nodes, dispatches, node, schema

_NO_RETRY = RetryPolicy(max_retries=0)
CAPS = [
    cap("t.resolve", input_schema=schema("t.text", "t.choice"), outputs=["t.symbol", DOMAIN_OUTPUT_KEY],
        events=["success"], retry=_NO_RETRY, timeout_ms=1000),
    cap("t.price", input_schema=schema("t.symbol"), outputs=["t.price"], retry=_NO_RETRY, timeout_ms=1000),
    cap("t.first", outputs=["t.first"], retry=_NO_RETRY, timeout_ms=1000),
]

_QUESTION = {
    "status": "clarification",
    "result": {"candidates": [{"symbol": "NDA-SE.ST"}, {"symbol": "NDA-FI.HE"}]},
    "explanation": "Which Nordea?",
    "metadata": {"answer_param": "t.choice"},
}


def _workflow(**resolve_transitions: str) -> Any:
    routes = [("success", "JUMP:price"), *resolve_transitions.items()]
    return compile_nodes({"main": node("first", {
        "first": block("t.first", ("success", "JUMP:resolve")),
        "resolve": block("t.resolve", *routes, params={"t.text": "nordea"}),
        "price": block("t.price", ("success", "RETURN")),
    })}, CAPS)


def _to_question(d: Driver) -> Suspended:
    d.submit()
    d.finish(outputs={"t.first": 1})
    cmds = d.finish("clarification", outputs={DOMAIN_OUTPUT_KEY: _QUESTION})
    assert dispatches(cmds) == [] and d.state.status == "suspended"
    [suspended] = [c for c in cmds if isinstance(c, Suspended)]
    return suspended


def test_a_clarification_suspends_the_run_with_its_question_and_a_derived_token() -> None:
    d = Driver(_workflow())
    s = _to_question(d)
    assert s.question == "Which Nordea?" and s.candidates == _QUESTION["result"]["candidates"]
    assert s.token == token_of("r1", "s2", 1) and s.step_id == "s2"
    assert d.workflow.in_flight(d.state) == []  # recovery sends nothing for a suspended run
    assert [q.token for q in d.workflow.suspensions(d.state)] == [s.token]
    assert d.state.trace[-1].event == "clarification" and d.state.trace[-1].action == "SUSPEND"


def test_an_answer_redispatches_that_step_only_with_the_answer_among_its_inputs() -> None:
    d = Driver(_workflow())
    s = _to_question(d)
    cmds = d.feed(RunResumed(s.token, "NDA-SE.ST", d.now))
    [again] = dispatches(cmds)
    # The same step, a new attempt, the answer under the param the question named: the first
    # step (s1), which finished, is not dispatched again.
    assert (again.step_id, again.attempt, again.capability) == ("s2", 2, "t.resolve")
    assert again.inputs == {"t.text": "nordea", "t.choice": "NDA-SE.ST"}
    assert d.state.status == "running" and d.state.context[ANSWER_KEY] == "NDA-SE.ST"
    cmds = d.finish(outputs={"t.symbol": "NDA-SE.ST"})
    assert [(c.step_id, c.capability) for c in dispatches(cmds)] == [("s3", "t.price")]
    cmds = d.finish(outputs={"t.price": 112.5})
    assert cmds[-1] == RunEnded("r1", "completed", None)
    assert [t.capability for t in d.state.trace] == ["t.first", "t.resolve", "t.resolve", "t.price"]


def test_a_declared_clarification_transition_routes_the_answered_step_instead() -> None:
    d = Driver(_workflow(clarification="JUMP:price"))
    s = _to_question(d)
    cmds = d.feed(RunResumed(s.token, {"symbol": "NDA-FI.HE"}, d.now))
    [next_step] = dispatches(cmds)
    assert (next_step.step_id, next_step.capability) == ("s3", "t.price")
    assert d.state.trace[-1].action == "JUMP:price" and d.state.context[ANSWER_KEY] == {"symbol": "NDA-FI.HE"}


def test_a_stale_or_wrong_token_or_a_wrong_choice_changes_nothing() -> None:
    d = Driver(_workflow())
    s = _to_question(d)
    before = msgspec.msgpack.encode(d.state)
    assert d.feed(RunResumed(token_of("r1", "s2", 2), "NDA-SE.ST", d.now)) == []  # not asked yet
    assert d.feed(RunResumed("0" * 32, "NDA-SE.ST", d.now)) == []
    assert d.feed(RunResumed(s.token, "AAPL", d.now)) == []  # none of the candidates
    assert d.feed(RunExpired("0" * 32, d.now)) == []
    d.state.notes.clear()
    assert msgspec.msgpack.encode(d.state) == before
    # Answered once: the same token is stale afterwards.
    d.feed(RunResumed(s.token, "NDA-SE.ST", d.now))
    assert d.feed(RunResumed(s.token, "NDA-FI.HE", d.now)) == []
    assert any("ignored" in n for n in d.state.notes)


def test_facts_about_steps_are_ignored_while_suspended_and_an_answer_is_ignored_while_running() -> None:
    d = Driver(_workflow())
    d.submit()
    assert d.feed(RunResumed(token_of("r1", "s1", 1), "x", d.now)) == []
    d.finish(outputs={"t.first": 1})
    d.finish("clarification", outputs={DOMAIN_OUTPUT_KEY: _QUESTION})
    assert d.feed(StepDeadlineExpired("s2", 1, d.now)) == [] and d.state.status == "suspended"


def test_a_question_nobody_answers_expires_the_run() -> None:
    d = Driver(_workflow())
    s = _to_question(d)
    cmds = d.feed(RunExpired(s.token, 5_000))
    assert len(cmds) == 1 and isinstance(cmds[0], RunEnded) and cmds[0].status == "expired"
    assert "nobody answered" in (d.state.error or "") and d.state.ended_ms == 5_000
    assert d.feed(RunResumed(s.token, "NDA-SE.ST", d.now)) == []  # too late


def test_cancelling_a_suspended_run_sends_no_cancel_step() -> None:
    d = Driver(_workflow())
    _to_question(d)
    cmds = d.feed(RunCancelled("changed my mind", d.now))
    assert not any(isinstance(c, CancelStep) for c in cmds) and cmds[-1].status == "cancelled"


def test_a_question_without_a_domain_output_asks_its_error_and_takes_any_answer() -> None:
    d = Driver(_workflow())
    d.submit()
    d.finish(outputs={"t.first": 1})
    cmds = d.finish("clarification", error="which market?")
    [s] = [c for c in cmds if isinstance(c, Suspended)]
    assert s.question == "which market?" and s.candidates == []
    [again] = dispatches(d.feed(RunResumed(s.token, "SE", d.now)))
    assert again.inputs[ANSWER_KEY] == "SE"


def test_replaying_the_facts_of_a_suspended_then_resumed_run_gives_the_same_state() -> None:
    d = Driver(_workflow())
    s = _to_question(d)
    d.feed(RunResumed(s.token, "NDA-SE.ST", d.now))
    d.finish(outputs={"t.symbol": "NDA-SE.ST"})
    d.finish(outputs={"t.price": 1.0})
    again = new_run(d.workflow, "r1")
    commands: list[Any] = []
    for fact in d.facts:
        commands.extend(advance(d.workflow, again, fact))
    d.state.notes.clear()
    again.notes.clear()
    assert msgspec.msgpack.encode(again) == msgspec.msgpack.encode(d.state)
    assert sum(isinstance(c, Dispatch) for c in commands) == 4
