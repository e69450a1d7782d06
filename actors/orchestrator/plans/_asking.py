"""Answering a plan step's question (``engine._suspend``): which open question a fact names,
and the step's next attempt with the answer.

A plan step that asks leaves ``state.running`` for ``state.asking`` (its slot is free for the
other steps meanwhile); an answer queues it, in step order, for a slot like any other unit,
and it is dispatched again as a new attempt when it has one: it once went straight back into
``running`` even with every slot taken, one step over ``max_concurrency``. Pure like the engine.
"""

from __future__ import annotations

from ontoflow.actors.orchestrator.engine import Command, RunExpired, RunResumed, describe
from ontoflow.actors.orchestrator.engine._suspend import ANSWER_KEY, Suspension, check_answer, resumed_dispatch
from ontoflow.actors.orchestrator.plans._ending import enqueue
from ontoflow.actors.orchestrator.plans._state import PlanState, Running, Unit

__all__ = ["asked", "dispatch_resumed", "resume"]


def asked(state: PlanState, fact: RunResumed | RunExpired) -> tuple[str, Suspension, Running] | None:
    """The open question ``fact``'s token names (step id, question, its attempt); else a note."""
    for step_id, (suspension, running) in state.asking.items():
        if suspension.token == fact.token:
            return step_id, suspension, running
    state.notes.append(f"{describe(fact)} ignored: stale or wrong token")
    return None


def resume(state: PlanState, fact: RunResumed) -> None:
    """Queue the answered step for a slot, with the answer (a wrong answer only adds a note);
    the caller then fills the free slots."""
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
    running.unit.resumed = (suspension, fact.answer, running.started_ms)
    enqueue(state, running.unit)
    state.notes.append(f"step {step_id} answered; queued to be dispatched again")


def dispatch_resumed(state: PlanState, unit: Unit, now: int, cmds: list[Command]) -> None:
    """Dispatch an answered step (``unit.resumed``) again, as the next attempt of the one that asked."""
    assert unit.resumed is not None
    suspension, answer, started_ms = unit.resumed
    unit.resumed = None
    command = resumed_dispatch(suspension, answer, now, unit.capability.budget_ms)
    state.running[unit.step_id] = Running(unit, command.attempt, started_ms, command)
    state.notes.append(f"step {unit.step_id} dispatched again as attempt {command.attempt}")
    cmds.append(command)
