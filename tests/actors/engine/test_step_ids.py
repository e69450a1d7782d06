"""A run's step ids are ``s1``, ``s2``... however many steps it takes: the first ones are made
once for every run (``STEP_IDS``), the later ones as they come, and both read alike."""

from __future__ import annotations

from ontoflow.actors.orchestrator.engine import RunEnded
from ontoflow.actors.orchestrator.engine._state import KEPT_STEP_IDS, step_id_of
from tests.actors.engine.helpers import Driver, block, cap, compile_nodes, dispatches, node

LOOP = [cap("x.a")]
STEPS = KEPT_STEP_IDS + 44


def test_step_id_of_names_every_step_alike_past_the_kept_ones() -> None:
    assert [step_id_of(seq) for seq in range(1, 2 * KEPT_STEP_IDS)] == [f"s{seq}" for seq in range(1, 2 * KEPT_STEP_IDS)]


def test_dispatched_steps_are_named_in_order_past_the_kept_ids() -> None:
    wf = compile_nodes({"main": node("a", {"a": block("x.a", ("success", "JUMP:a"))})}, LOOP, max_steps=STEPS)
    run = Driver(wf)
    names = [d.step_id for d in dispatches(run.submit())]
    for _ in range(STEPS - 1):
        names += [d.step_id for d in dispatches(run.finish())]
    assert names == [f"s{seq}" for seq in range(1, STEPS + 1)]
    assert [t.step_id for t in run.state.trace] == names[:-1]


def test_undispatched_steps_are_named_in_order_past_the_kept_ids() -> None:
    needy = cap("x.needy", input_schema={"type": "object", "properties": {"k": {}}, "required": ["k"]})
    wf = compile_nodes({"main": node("a", {"a": block("x.needy", ("invalid", "JUMP:a"))})}, [needy], max_steps=STEPS)
    run = Driver(wf)
    (ended,) = run.submit()
    assert isinstance(ended, RunEnded) and ended.status == "failed"
    assert [t.step_id for t in run.state.trace] == [f"s{seq}" for seq in range(1, STEPS + 1)]
