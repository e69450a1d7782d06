"""A person's answer reaches the step that asked, never a step after it.

Before: an answer was written into the run's context (``ontoflow.answer``), which every step
begun after it took as an input layer: in ``[which Nordea?, which Volvo?]`` run one after the
other, the second step got the first one's answer as if a person had answered its own
question, and a handler that asks only when no answer is given (the HTTP domains' pattern)
answered with the wrong company instead of asking."""

from __future__ import annotations

from ontoflow.protocols import Composition, RetryPolicy
from ontoflow.protocols.domain import DOMAIN_OUTPUT_KEY

from ontoflow.actors.orchestrator.engine import ANSWER_KEY, RunEnded, RunResumed, Suspended

from tests.actors.plans.helpers import Driver, cap, compile_data, dispatched

_NO_RETRY = RetryPolicy(max_retries=0)
CAPS = [cap("t.resolve", "t.text", ANSWER_KEY, outputs=("t.symbol", DOMAIN_OUTPUT_KEY), retry=_NO_RETRY, timeout_ms=1000,
            composition=Composition(followup_roles=["notifier"])),
        cap("t.notify", ANSWER_KEY, outputs=("t.sent",), retry=_NO_RETRY, timeout_ms=1000, roles=["notifier"])]
_QUESTION = {"status": "clarification", "explanation": "Which one?", "result": {"candidates": ["A", "B"]}}


def test_the_next_step_and_the_follow_up_do_not_get_another_steps_answer() -> None:
    steps = [{"id": "one", "capability": "t.resolve", "params": {"t.text": "nordea"}},
             {"id": "two", "capability": "t.resolve", "params": {"t.text": "volvo"}}]
    d = Driver(compile_data({"execution_mode": "sequential", "steps": steps}, CAPS))
    d.submit()
    cmds = d.finish("one", "clarification", outputs={DOMAIN_OUTPUT_KEY: _QUESTION})
    [question] = [c for c in cmds if isinstance(c, Suspended)]
    d.feed(RunResumed(question.token, "A", d.now))
    assert d.in_flight["one"].inputs == {"t.text": "nordea", ANSWER_KEY: "A"}  # the step that asked: its answer
    assert dispatched(d.finish("one", outputs={"t.symbol": "A"})) == ["one+notifier", "two"]
    assert d.in_flight["two"].inputs == {"t.text": "volvo"}
    assert d.in_flight["one+notifier"].inputs == {}
    d.finish("one+notifier", outputs={"t.sent": True})
    assert dispatched(d.finish("two", outputs={"t.symbol": "V"})) == ["two+notifier"]
    assert d.in_flight["two+notifier"].inputs == {}
    assert d.finish("two+notifier", outputs={"t.sent": True})[-1] == RunEnded("r1", "completed", None)
    assert d.state.context[ANSWER_KEY] == "A"  # still recorded in the run's context, as the README says
