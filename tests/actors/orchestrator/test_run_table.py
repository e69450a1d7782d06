"""The run table on its own: runs through the engine contract, deadlines, ends, observers."""

from __future__ import annotations

from ontoflow.actors.orchestrator import Run, RunResult, RunTable
from ontoflow.actors.orchestrator._run_table import result_of
from ontoflow.actors.orchestrator.engine import (
    Dispatch,
    RunCancelled,
    RunEnded,
    RunExpired,
    RunState,
    RunSubmitted,
    StepFinished,
    Suspended,
    TraceEntry,
)
from ontoflow.protocols import Outcome

from tests.actors.orchestrator.parts import one_step


def _started(table: RunTable, run_id: str = "r1", **options) -> tuple[Run, Dispatch]:
    run = Run(one_step(), run_id)
    table.add(run, **options)
    [dispatch] = table.advance(run, RunSubmitted(run_id=run_id, inputs={}, now_ms=0))
    assert isinstance(dispatch, Dispatch)
    return run, dispatch


def test_a_run_goes_through_its_engine_and_ends_with_its_result_published() -> None:
    table = RunTable()
    ended, progress = [], []
    table.on_run_ended.append(ended.append)
    table.on_progress.append(lambda run_id, entries: progress.append((run_id, len(entries))))
    run, d = _started(table)
    assert table.in_flight == 1 and table.live("r1") is run
    outcome = Outcome(run_id="r1", step_id=d.step_id, attempt=d.attempt, event="success")
    [command] = table.advance(run, StepFinished(outcome=outcome, now_ms=5))
    assert isinstance(command, RunEnded) and command.status == "completed"
    result = table.end(run, command)
    assert result.status == "completed" and ended == [result] and progress == [("r1", 1)]
    assert table.in_flight == 0 and table.live("r1") is None and table.get("r1") is run
    assert result == result_of(run.state, "completed", None)  # ``end`` makes it in line: the same fields


def test_deadlines_expire_once_and_only_for_live_runs() -> None:
    table = RunTable()
    run, _ = _started(table, deadline_at_ms=100)
    assert table.expired(99) == []
    assert table.expired(100) == [run]
    assert table.expired(200) == []  # reported once
    [*_, ended] = table.advance(run, RunCancelled(reason="run deadline expired", now_ms=100))
    table.end(run, ended)
    assert run.result is not None and run.result.status == "cancelled"


def test_find_and_forget() -> None:
    table = RunTable()
    run, _ = _started(table, idempotency_key="k", trigger_key="t")
    assert table.find(idempotency_key="k") == "r1" and table.find(trigger_key="t") == "r1"
    assert table.find(idempotency_key="other") is None and table.find() is None
    table.forget("r1")
    assert "r1" in table  # a live run is never forgotten
    [*_, ended] = table.advance(run, RunCancelled(reason="x", now_ms=1))
    table.end(run, ended)
    table.forget("r1")
    assert "r1" not in table and len(table) == 0


def test_an_observer_that_raises_does_not_break_the_end() -> None:
    table = RunTable()
    table.on_run_ended.append(lambda result: 1 / 0)
    seen = []
    table.on_run_ended.append(seen.append)
    run, _ = _started(table)
    [*_, ended] = table.advance(run, RunCancelled(reason="x", now_ms=1))
    table.end(run, ended)
    assert len(seen) == 1


def _asking(table: RunTable, run_id: str = "r1") -> tuple[Run, Suspended]:
    run, d = _started(table, run_id)
    outcome = Outcome(run_id=run_id, step_id=d.step_id, attempt=d.attempt, event="clarification", error="which?")
    [command] = table.advance(run, StepFinished(outcome=outcome, now_ms=10))
    assert isinstance(command, Suspended)
    table.suspended(run, command)
    return run, command


def test_a_question_is_held_by_its_token_and_expires_once_after_the_answer_timeout() -> None:
    table = RunTable(answer_timeout_ms=100)
    told = []
    table.on_suspended.append(lambda run: told.append(run.run_id))
    run, asked = _asking(table)
    assert told == ["r1"] and table.asked(asked.token) == "r1" and table.expires_at(asked.since_ms) == 110
    assert table.questions_expired(109) == []
    assert table.questions_expired(110) == [(run, asked.token)]
    assert table.questions_expired(500) == []  # reported once
    [ended] = table.advance(run, RunExpired(token=asked.token, now_ms=110))
    assert isinstance(ended, RunEnded) and ended.status == "expired"
    assert table.end(run, ended).status == "expired"


def test_a_rebuilt_run_has_its_questions_armed_again_and_an_ended_run_none() -> None:
    table = RunTable(answer_timeout_ms=None)
    run, asked = _asking(table)
    again = RunTable(answer_timeout_ms=50)
    again.add(run)
    again.rearm(run)
    assert again.asked(asked.token) == "r1" and again.questions_expired(asked.since_ms + 50) == [(run, asked.token)]
    assert table.questions_expired(10**12) == []  # no timeout: a question waits forever
    [*_, ended] = table.advance(run, RunCancelled(reason="x", now_ms=20))
    table.end(run, ended)
    assert table.asked(asked.token) is None


def test_running_names_the_steps_in_flight_for_a_watcher_and_none_once_ended() -> None:
    table = RunTable()
    run, d = _started(table)
    assert table.running("r1") == [(d.step_id, d.capability)] and table.running("nope") == []
    outcome = Outcome(run_id="r1", step_id=d.step_id, attempt=d.attempt, event="success")
    [command] = table.advance(run, StepFinished(outcome=outcome, now_ms=5))
    table.end(run, command)
    assert table.running("r1") == []


def test_an_engine_that_raises_fails_its_run_instead_of_leaving_it_running(capsys) -> None:
    # plans12 found an engine bug (a map keyed by null) that raised out of the advance: the
    # submit was answered `internal` and the run stayed `running` for ever.
    table = RunTable()
    run, d = _started(table)
    engine = run.advance

    def broken(state, fact):
        if isinstance(fact, StepFinished):
            raise KeyError("secret-value")
        return engine(state, fact)

    run.advance = broken
    outcome = Outcome(run_id="r1", step_id=d.step_id, attempt=d.attempt, event="success")
    [command] = table.advance(run, StepFinished(outcome=outcome, now_ms=5))
    assert isinstance(command, RunEnded) and command.status == "failed"
    assert command.error == ("internal error: the engine failed on StepFinished (KeyError); "
                             "the daemon's log says where")
    result = table.end(run, command)
    assert result.status == "failed" and result.ended_ms == 5 and table.live("r1") is None
    assert (run.state.status, run.state.error) == ("failed", command.error)  # a read of it agrees (review12)
    assert "secret-value" not in capsys.readouterr().out
    import pytest

    other, _ = _started(table, "r2")
    with pytest.raises(TypeError):  # not a fact: the caller's mistake still raises
        table.advance(other, "not a fact")


def test_result_of_is_the_result_the_fields_name() -> None:
    # ``result_of`` builds the RunResult positionally (once per run): each field in its place.
    state = RunState(run_id="r1", status="completed", context={"k": 1}, started_ms=5, ended_ms=9)
    state.trace.append(TraceEntry("s1", "main", "a", "x.a", "success", None, 1, 0.5, 0, None, None, None, 5, 9))
    assert result_of(state, "failed", "it broke") == RunResult(
        run_id="r1", status="failed", error="it broke", context={"k": 1}, trace=state.trace, started_ms=5, ended_ms=9)
    assert TraceEntry("s1", "main", "a", "x.a", "success", None, 1, 0.5, 0, None, None, None, 5, 9) == TraceEntry(
        step_id="s1", node="main", block="a", capability="x.a", event="success", action=None, attempt=1,
        duration_ms=0.5, retries=0, reason=None, error=None, prerequisite_of=None, started_ms=5, ended_ms=9)
