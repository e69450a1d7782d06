"""Read-only questions about runs: status, list and trace, from memory or from the journal.

A run still in memory answers from its live state; one that ended and was forgotten (or ended
before this daemon started) is rebuilt by replaying its journaled facts through the same pure
engine, so ``show`` of a month-old run is exactly what it was.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import msgspec

from ontoflow.actors.orchestrator._orchestrator import Orchestrator
from ontoflow.actors.orchestrator._results import RunResult
from ontoflow.actors.orchestrator._run_table import result_of
from ontoflow.actors.orchestrator.engine import Fact, RunCancelled, RunSubmitted, StepFinished
from ontoflow.protocols.client import RunList, RunStatus, RunSummary, RunTrace

__all__ = ["Found", "Queries", "run_status", "trace_dicts"]

_fact_decoder = msgspec.msgpack.Decoder(Fact)
_record_decoder = msgspec.msgpack.Decoder(tuple[str, int, str, str])


class Found(msgspec.Struct):
    """A run's engine state and, once it ended, its result."""

    state: Any
    result: RunResult | None


def trace_dicts(entries: list[Any]) -> list[dict[str, Any]]:
    """Trace entries for the wire, where a client reads each as a map.

    A ``TraceEntry`` (a map-encoded Struct) already encodes as exactly the map its
    ``msgspec.to_builtins`` would give, so the entries go as they are; converting each one
    cost the daemon microseconds per step for the same bytes.
    """
    return list(entries)


def run_status(result: RunResult) -> RunStatus:
    """The client's view of an ended run."""
    return RunStatus(
        run_id=result.run_id,
        status=result.status,
        error=result.error,
        context=result.context,
        trace=trace_dicts(result.trace),
        started_ms=result.started_ms,
        ended_ms=result.ended_ms,
    )


class Queries:
    """Answers about runs of ``orchestrator`` (see the module docstring)."""

    def __init__(self, orchestrator: Orchestrator) -> None:
        self._orch = orchestrator
        self._workflows: OrderedDict[str, Any] = OrderedDict()  # compiled sources, bounded

    def lookup(self, run_id: str) -> Found | None:
        """The run's state and result, or None when neither memory nor the journal knows it."""
        orch = self._orch
        if not orch.uncommitted(run_id):  # else memory is ahead of the journal: read what is committed
            run = orch.runs.get(run_id)  # one lookup: a submit with wait=True asks this for every run
            if run is not None:
                return Found(run.state, run.result)
        journal = orch.journal
        if journal is None:
            return None
        row = journal.run(run_id)
        if row is None:
            return None
        if len(self._workflows) > 64:
            self._workflows.popitem(last=False)
        run = orch.replay(row, journal.facts(run_id), self._workflows)
        state = run.state
        result = None if row.status == "running" else result_of(state, state.status, state.error)
        return Found(state, result)

    def list_runs(self, status: str | None, limit: int) -> RunList:
        """The newest runs first (from the journal when there is one)."""
        limit = max(1, min(limit, 10_000))
        orch = self._orch
        if orch.journal is not None:
            # The journal's row says ``running`` until the run ends; a live run that waits for
            # an answer says ``suspended`` (its state's status), and is listed and filtered so.
            unfinished = status in ("running", "suspended")
            rows = orch.journal.runs(status="running" if unfinished else status, limit=10_000 if unfinished else limit)
            summaries = []
            for r in rows:
                run = orch.runs.get(r.run_id) if r.status == "running" else None
                now_status = r.status if run is None or run.state.status != "suspended" else "suspended"
                if status is None or now_status == status:
                    summaries.append(RunSummary(run_id=r.run_id, status=now_status, name=r.name,
                                                submitted_ms=r.submitted_ms, ended_ms=r.ended_ms))
                    if len(summaries) >= limit:
                        break
            return RunList(runs=summaries)
        summaries = []
        for run in reversed(list(orch.runs)):
            state = run.state
            if status is None or state.status == status:
                summaries.append(RunSummary(run_id=state.run_id, status=state.status, submitted_ms=state.started_ms or 0,
                                            ended_ms=state.ended_ms))
                if len(summaries) >= limit:
                    break
        return RunList(runs=summaries)

    def show(self, run_id: str) -> RunTrace | None:
        """The run's trace and every journaled event, or None when unknown."""
        found = self.lookup(run_id)
        if found is None:
            return None
        state = found.state
        events: list[dict[str, Any]] = []
        journal = self._orch.journal
        if journal is not None:
            for row in journal.facts(run_id):
                if row.kind == "dispatched":
                    step_id, attempt, capability, worker_id = _record_decoder.decode(row.body)
                    events.append({"at_ms": row.at_ms, "kind": "dispatched", "step_id": step_id, "attempt": attempt,
                                   "capability": capability, "worker_id": worker_id})
                elif row.kind == "fact":
                    events.append(_describe(_fact_decoder.decode(row.body)))
        return RunTrace(
            run_id=run_id,
            status=state.status,
            error=state.error,
            started_ms=state.started_ms or 0,
            ended_ms=state.ended_ms or 0,
            context=state.context,
            trace=trace_dicts(state.trace),
            events=events,
        )


def _describe(fact: Any) -> dict[str, Any]:
    """A fact as an event dict: keys and sizes of values, the values only of outcomes' events."""
    kind = type(fact).__struct_config__.tag
    event: dict[str, Any] = {"at_ms": fact.now_ms, "kind": kind}
    if isinstance(fact, RunSubmitted):
        event["input_keys"] = sorted(fact.inputs)
    elif isinstance(fact, StepFinished):
        o = fact.outcome
        event.update(step_id=o.step_id, attempt=o.attempt, event=o.event, reason=o.reason, error=o.error,
                     duration_ms=o.duration_ms, retries=o.retries, output_keys=sorted(o.outputs))
    elif isinstance(fact, RunCancelled):
        event["reason"] = fact.reason
    else:
        for field in ("step_id", "attempt", "reason"):
            if hasattr(fact, field):
                event[field] = getattr(fact, field)
    return event
