"""Suspension in the plan engine: a step asks while others go on; an answer re-runs only it."""

from __future__ import annotations

from ontoflow.protocols import RetryPolicy
from ontoflow.protocols.domain import DOMAIN_OUTPUT_KEY

from ontoflow.actors.orchestrator.engine import (
    ANSWER_KEY,
    CancelStep,
    Dispatch,
    RunEnded,
    RunExpired,
    RunResumed,
    Suspended,
    token_of,
)

from tests.actors.plans.helpers import Driver, cap, compile_data, dispatched

_NO_RETRY = RetryPolicy(max_retries=0)
CAPS = [
    cap("t.resolve", "t.text", ANSWER_KEY, outputs=("t.symbol", DOMAIN_OUTPUT_KEY), retry=_NO_RETRY, timeout_ms=1000),
    cap("t.price", "t.symbol", outputs=("t.price",), retry=_NO_RETRY, timeout_ms=1000),
    cap("t.other", outputs=("t.other",), retry=_NO_RETRY, timeout_ms=1000),
]
_QUESTION = {"status": "clarification", "explanation": "Which one?",
             "result": {"candidates": ["NDA-SE.ST", "NDA-FI.HE"]}}
_STEPS = [
    {"id": "resolve", "capability": "t.resolve", "params": {"t.text": "nordea"}},
    {"id": "other", "capability": "t.other"},
    {"id": "price", "capability": "t.price", "depends_on": ["resolve"],
     "params": {"t.symbol": "${resolve.t.symbol}"}},
]


def _ask(d: Driver) -> Suspended:
    assert dispatched(d.submit()) == ["resolve", "other"]
    cmds = d.finish("resolve", "clarification", outputs={DOMAIN_OUTPUT_KEY: _QUESTION})
    [s] = [c for c in cmds if isinstance(c, Suspended)]
    return s


def test_a_step_that_asks_leaves_the_others_running_and_the_run_is_suspended_when_they_end() -> None:
    d = Driver(compile_data({"max_concurrency": 4, "steps": _STEPS}, CAPS))
    s = _ask(d)
    assert s.token == token_of("r1", "resolve", 1) and s.candidates == ["NDA-SE.ST", "NDA-FI.HE"]
    assert d.state.status == "running" and d.compiled.in_flight(d.state)[0].step_id == "other"
    d.finish("other", outputs={"t.other": 1})
    assert d.state.status == "suspended" and d.compiled.in_flight(d.state) == []
    assert [q.token for q in d.compiled.suspensions(d.state)] == [s.token]


def test_an_answer_redispatches_only_the_asking_step_then_the_plan_completes() -> None:
    d = Driver(compile_data({"max_concurrency": 4, "steps": _STEPS}, CAPS))
    s = _ask(d)
    d.finish("other", outputs={"t.other": 1})
    cmds = d.feed(RunResumed(s.token, "NDA-FI.HE", d.now))
    [again] = [c for c in cmds if isinstance(c, Dispatch)]
    assert (again.step_id, again.attempt) == ("resolve", 2) and again.inputs[ANSWER_KEY] == "NDA-FI.HE"
    assert d.state.status == "running"
    assert dispatched(d.finish("resolve", outputs={"t.symbol": "NDA-FI.HE"})) == ["price"]
    cmds = d.finish("price", outputs={"t.price": 3.0})
    assert isinstance(cmds[-1], RunEnded) and cmds[-1].status == "completed"
    # "other" ran once: the answer re-ran nothing that had finished.
    assert [t.step_id for t in d.state.trace].count("other") == 1


def test_a_wrong_choice_or_token_is_refused_and_expiry_ends_the_run_expired() -> None:
    d = Driver(compile_data({"max_concurrency": 4, "steps": _STEPS}, CAPS))
    s = _ask(d)
    assert d.feed(RunResumed(s.token, "AAPL", d.now)) == []
    assert d.feed(RunResumed("f" * 32, "NDA-FI.HE", d.now)) == []
    cmds = d.feed(RunExpired(s.token, d.now))
    # "other" was still in flight: it is told to stop.
    assert [c.step_id for c in cmds if isinstance(c, CancelStep)] == ["other"]
    assert cmds[-1].status == "expired" and d.state.status == "expired"
    assert d.state.results["resolve"].event == "clarification"
