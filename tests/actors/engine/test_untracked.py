"""A run's engine records are pure data the cyclic collector need not track: each step makes
several (the fact, the command, the pending step, the step's end and its trace entry), and a
tracked object costs an allocation in the collector's lists, a traversal at each collection
and 16 bytes more per object held for a run in flight."""

from __future__ import annotations

import gc

from ontoflow.actors.orchestrator._results import RunResult
from ontoflow.actors.orchestrator._run_table import result_of
from ontoflow.actors.orchestrator.engine import RunEnded, outcome_end

from tests.actors.engine.helpers import Driver, block, cap, compile_nodes, node


def test_the_records_of_a_run_are_not_tracked_by_the_collector() -> None:
    driver = Driver(compile_nodes({"main": node("a", {"a": block("x.a")})}, [cap("x.a")]))
    driver.submit({"k": [1, 2]})
    pending, dispatch = driver.state.pending, driver.pending
    commands = driver.finish(outputs={"x.a.out": [1]})
    fact = driver.facts[-1]
    state = driver.state
    ended = next(c for c in commands if type(c) is RunEnded)
    end = outcome_end(fact, capability="x.a", prefix="x.a.", declared=(), started_ms=0)
    result: RunResult = result_of(state, ended.status, ended.error)
    records = [state, pending, dispatch, fact, ended, end, *state.trace, result]
    assert [type(r).__name__ for r in records if gc.is_tracked(r)] == []
    # What they hold is still the collector's: a container in a record is tracked on its own.
    assert gc.is_tracked(state.context) and gc.is_tracked(state.trace)
