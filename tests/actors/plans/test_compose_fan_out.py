"""A fan-out step's follow-up gets ``_step_explanation`` as its elements' explanations.

Before: a plan quoting ``[A, B]`` through a capability that fans its list out and asks for a
``notifier`` (seed 004's compose/notify) ran the notifier once for the step, as it should, but
with ``message`` from ``_step_explanation`` resolved to nothing: the gathered outputs hold a
list of ``DomainOutput`` s, not one, and the notifier ended ``invalid`` (nothing notified)."""

from __future__ import annotations

from ontoflow.protocols import ArrayParam, Composition, Decomposition, RetryPolicy
from ontoflow.protocols.domain import DOMAIN_OUTPUT_KEY as OUT

from ontoflow.actors.orchestrator.engine import RunEnded
from ontoflow.actors.orchestrator.plans._compose import map_params

from tests.actors.plans.helpers import Driver, cap, compile_data, dispatched

_NO_RETRY = RetryPolicy(max_retries=0)
SEED_PARAM_MAP = {"t.message": {"from_parameters": ["_step_explanation"]}}
CAPS = [
    cap("t.quote", "t.sym", outputs=(OUT,), retry=_NO_RETRY, timeout_ms=1000,
        decomposition=Decomposition(array_params=[ArrayParam(param_name="t.syms", single_param_name="t.sym", max_concurrency=4)]),
        composition=Composition(followup_roles=["notifier"], enabled_if={"path": "parameters.notify", "equals": True},
                                param_map=SEED_PARAM_MAP)),
    cap("t.notify", "t.message", required=("t.message",), outputs=("t.sent",), retry=_NO_RETRY, timeout_ms=1000,
        roles=["notifier"]),
]


def test_the_notifier_of_a_fan_out_gets_every_elements_explanation_in_order() -> None:
    plan = {"parameters": {"notify": True}, "combine_mode": "report",
            "steps": [{"id": "q", "capability": "t.quote", "params": {"t.syms": ["A", "B"]}}]}
    d = Driver(compile_data(plan, CAPS))
    assert dispatched(d.submit()) == ["q[0]", "q[1]"]
    d.finish("q[1]", outputs={OUT: {"status": "success", "explanation": "B is 2"}})
    cmds = d.finish("q[0]", outputs={OUT: {"status": "success", "explanation": "A is 1"}})
    assert dispatched(cmds) == ["q+notifier"]
    assert d.in_flight["q+notifier"].inputs == {"t.message": "A is 1\nB is 2"}
    assert d.finish("q+notifier", outputs={"t.sent": True})[-1] == RunEnded("r1", "completed", None)


def test_elements_without_an_explanation_give_none() -> None:
    assert map_params(SEED_PARAM_MAP, {}, {OUT: [{"status": "success"}, "not a map"]}) == {}
    assert map_params(SEED_PARAM_MAP, {}, {"explanation": ["x", 3, "y"]}) == {"t.message": "x\ny"}


def test_a_reference_to_a_fan_out_steps_domain_output_field_is_the_list_of_its_elements() -> None:
    """Before: ``${q.explanation}`` compiled (the capability speaks DomainOutput) and then did
    not resolve, the gathered outputs holding a list of DomainOutputs: the step ended invalid."""
    caps = [*CAPS, cap("t.say", "t.message", "t.all", outputs=("t.sent",), retry=_NO_RETRY, timeout_ms=1000)]
    plan = {"steps": [{"id": "q", "capability": "t.quote", "params": {"t.syms": ["A", "B"]}},
                      {"id": "s", "capability": "t.say", "depends_on": ["q"],
                       "params": {"t.all": "${q.result.price}", "t.message": "got ${q.explanation}"}}]}
    d = Driver(compile_data(plan, caps))
    d.submit()
    d.finish("q[0]", outputs={OUT: {"status": "success", "explanation": "A is 1", "result": {"price": 1}}})
    cmds = d.finish("q[1]", outputs={OUT: {"status": "success", "explanation": "B is 2", "result": {"price": 2}}})
    assert dispatched(cmds) == ["s"]
    assert d.in_flight["s"].inputs == {"t.all": [1, 2], "t.message": 'got ["A is 1","B is 2"]'}
