"""The plan's own ``ontoflow.plan.steps`` is not replaced by a step's output of that name.

Before: in ``last`` and ``merge`` a capability declaring the output ``ontoflow.plan.steps``
replaced the engine's record of every step's status with whatever it answered (a failed step
could be shown as succeeded)."""

from __future__ import annotations

import pytest

from ontoflow.protocols import RetryPolicy

from ontoflow.actors.orchestrator.plans import STEPS_KEY

from tests.actors.plans.helpers import Driver, cap, compile_data

CAPS = [cap("t.forge", outputs=(STEPS_KEY, "t.v"), retry=RetryPolicy(max_retries=0), timeout_ms=1000)]


@pytest.mark.parametrize("mode", ["last", "merge"])
def test_a_steps_output_cannot_stand_for_the_plans_record(mode: str) -> None:
    steps = [{"id": "a", "capability": "t.forge", "required": False}, {"id": "b", "capability": "t.forge"}]
    d = Driver(compile_data({"combine_mode": mode, "steps": steps}, CAPS))
    d.submit()
    d.finish("a", "failure", error="no")
    d.finish("b", outputs={STEPS_KEY: {"a": "succeeded", "b": "succeeded"}, "t.v": 1})
    assert d.state.status == "completed"
    assert d.state.context[STEPS_KEY] == {"a": "failed", "b": "succeeded"} and d.state.context["t.v"] == 1
