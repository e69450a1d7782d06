"""A fan-out child that asks a person leaves its fan-out's slot, as a step leaves the plan's.

Before: the asking child kept its slot of the fan-out (``max_concurrency`` 1 here), so the other
elements waited behind a question; with nothing in flight and the fan-out still queued, the
run's status stayed ``running``, never ``suspended``: nothing could happen until an answer,
yet the shell's "suspended" observers were never told, and a status said "running"."""

from __future__ import annotations

from ontoflow.protocols import ArrayParam, Decomposition, RetryPolicy
from ontoflow.protocols.domain import DOMAIN_OUTPUT_KEY

from ontoflow.actors.orchestrator.engine import ANSWER_KEY, RunEnded, RunResumed, Suspended

from tests.actors.plans.helpers import Driver, cap, compile_data, dispatched

CAPS = [cap("t.resolve", "t.text", ANSWER_KEY, outputs=("t.symbol", DOMAIN_OUTPUT_KEY), timeout_ms=1000,
            retry=RetryPolicy(max_retries=0),
            decomposition=Decomposition(array_params=[ArrayParam(param_name="t.texts", single_param_name="t.text",
                                                                 max_concurrency=1)]))]
_QUESTION = {"status": "clarification", "explanation": "Which one?", "result": {"candidates": ["A", "B"]}}


def _driver() -> Driver:
    return Driver(compile_data({"steps": [{"id": "r", "capability": "t.resolve", "params": {"t.texts": ["x", "y", "z"]}}]},
                               CAPS))


def test_the_other_elements_go_on_and_the_run_is_suspended_once_they_end() -> None:
    d = _driver()
    assert dispatched(d.submit()) == ["r[0]"]
    cmds = d.finish("r[0]", "clarification", outputs={DOMAIN_OUTPUT_KEY: _QUESTION})
    [question] = [c for c in cmds if isinstance(c, Suspended)]
    assert dispatched(cmds) == ["r[1]"]
    assert dispatched(d.finish("r[1]", outputs={"t.symbol": "Y"})) == ["r[2]"]
    assert d.state.status == "running"
    assert dispatched(d.finish("r[2]", outputs={"t.symbol": "Z"})) == []
    assert d.state.status == "suspended" and d.state.running == {}
    assert dispatched(d.feed(RunResumed(question.token, "A", d.now))) == ["r[0]"]
    cmds = d.finish("r[0]", outputs={"t.symbol": "X"})
    assert cmds[-1] == RunEnded("r1", "completed", None)
    assert d.state.context["t.symbol"] == ["X", "Y", "Z"]


def test_an_answer_waits_for_a_slot_of_its_fan_out() -> None:
    d = _driver()
    d.submit()
    cmds = d.finish("r[0]", "clarification", outputs={DOMAIN_OUTPUT_KEY: _QUESTION})
    [question] = [c for c in cmds if isinstance(c, Suspended)]
    assert dispatched(d.feed(RunResumed(question.token, "A", d.now))) == []  # r[1] holds the one slot
    assert list(d.state.running) == ["r[1]"]
    assert dispatched(d.finish("r[1]", outputs={"t.symbol": "Y"})) == ["r[2]"]
    assert dispatched(d.finish("r[2]", outputs={"t.symbol": "Z"})) == ["r[0]"]
    assert d.state.max_in_flight == 1
    assert d.finish("r[0]", outputs={"t.symbol": "X"})[-1] == RunEnded("r1", "completed", None)
    assert d.state.context["t.symbol"] == ["X", "Y", "Z"]
