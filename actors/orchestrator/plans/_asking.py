"""Answering a plan step's question (``engine._suspend``): which open question a fact names,
and the step's next attempt with the answer.

A plan step that asks leaves ``state.running`` for ``state.asking`` (its slot is free for the
other steps meanwhile); an answer puts it back in ``running`` as a new attempt, even when the
plan's slots are all taken (it held one when it asked). Pure like the engine.
"""

from __future__ import annotations

from ontoflow.actors.orchestrator.engine import Command, RunExpired, RunResumed, describe
from ontoflow.actors.orchestrator.engine._suspend import ANSWER_KEY, Suspension, check_answer, resumed_dispatch
from ontoflow.actors.orchestrator.plans._state import PlanState, Running

__all__ = ["asked", "resume"]


def asked(state: PlanState, fact: RunResumed | RunExpired) -> tuple[str, Suspension, Running] | None:
    """The open question ``fact``'s token names (step id, question, its attempt); else a note."""
    for step_id, (suspension, running) in state.asking.items():
        if suspension.token == fact.token:
            return step_id, suspension, running
    state.notes.append(f"{describe(fact)} ignored: stale or wrong token")
    return None


def resume(state: PlanState, fact: RunResumed, cmds: list[Command]) -> None:
    """Dispatch the answered step again with the answer (a wrong answer only adds a note)."""
    found = asked(state, fact)
    if found is None:
        return
    step_id, suspension, running = found
    refused = check_answer(suspension, fact.answer)
    if refused is not None:
        state.notes.append(f"RunResumed ignored: {refused}")
        return
    del state.asking[step_id]
    state.context[ANSWER_KEY] = fact.answer
    running.dispatch = resumed_dispatch(suspension, fact.answer, fact.now_ms, running.unit.capability.budget_ms)
    running.attempt = running.dispatch.attempt
    state.running[step_id] = running
    state.notes.append(f"step {step_id} answered; dispatched again as attempt {running.attempt}")
    cmds.append(running.dispatch)
