"""Replay one journaled run through the pure engine and check every decision it recorded.

What the journal holds of a run's decisions, and how each is checked:

- every ``dispatched`` record (step id, attempt, capability) must be a dispatch the engine
  decides again, at or before the fact the record follows, and only once. A dispatch may leave
  later than it was decided (it waited in the queue for a worker), so the check is causal, not
  positional; a dispatch decided but never sent (withdrawn while queued) is counted, not failed;
- every worker's outcome (``step_finished``) must follow the ``dispatched`` record of its
  attempt: the shell records an Invoke before it leaves and takes an outcome only from the
  worker it went to, so an outcome of an attempt never sent was answered by no worker;
- the run's row: its status and its end time must be the ones the engine reaches again (an
  engine that raises on a fact fails the run there, as the daemon's shell does: a replay of
  such a run ends ``failed`` with the error the daemon answered, not ``could not be replayed``);
- the end itself (status, error, times, the final context and the trace, encoded with a
  deterministic msgpack encoder) must come out byte for byte the same from a second,
  independent replay (a compile of its own): a nondeterministic engine is caught here.

The journal keeps no copy of the final context: the report gives its SHA-256
(``context_sha256``), to compare with that of the context the daemon answered.
"""

from __future__ import annotations

from typing import Any

from ontoflow.actors.orchestrator import compile_source
from ontoflow.actors.orchestrator.engine import Dispatch, RunEnded, RunEngine, StepFinished
from ontoflow.actors.replay._decisions import (
    UNRESOLVED,
    Dispatched,
    advance,
    block_of,
    context_digest,
    fact_about,
    fingerprint,
    read_rows,
)
from ontoflow.actors.replay._results import Mismatch, RunReplay
from ontoflow.runtime.journal import FactRow, RunRow

__all__ = ["verify_run"]


def verify_run(row: RunRow, rows: list[FactRow], source: bytes) -> RunReplay:
    """Replay ``row``'s facts against its pinned ``source`` and check its recorded decisions.

    Args:
        row: the run's row in the journal.
        rows: its fact rows, in journal order.
        source: its pinned source (``encode_source`` bytes).

    Returns:
        The replay: ``matched`` with no ``mismatch`` when every decision was made again.

    Raises:
        msgspec.DecodeError: when the source or a row does not decode.
        protocols.errors.ManifestError: when the source no longer compiles.
    """
    items = read_rows(rows)
    engine: RunEngine = compile_source(source, connections=UNRESOLVED)
    first = _Replay(engine, row.run_id)
    mismatch = first.run(items)
    state = first.state
    if mismatch is None:
        mismatch = _check_end(row, state, len(first.ended))
    if mismatch is None:
        again = _Replay(compile_source(source, connections=UNRESOLVED), row.run_id)
        again.run(items)
        if fingerprint(again.state) != fingerprint(state):
            mismatch = Mismatch(fact_index=0, what="determinism", recorded="the end of the first replay",
                                now="a second replay of the same facts ends differently")
    return RunReplay(
        run_id=row.run_id, kind=engine.kind, name=engine.name, status=row.status, matched=mismatch is None,
        facts=first.facts, dispatches=first.checked, unsent=len(first.decided),
        status_now=state.status, error_now=state.error, context_sha256=context_digest(state.context),
        mismatch=mismatch,
    )


class _Replay:
    """One pass over a run's items: facts applied, dispatch records checked."""

    def __init__(self, engine: RunEngine, run_id: str) -> None:
        self.engine = engine
        self.state = engine.new_run(run_id)
        self.facts = 0
        self.checked = 0
        #: (step id, attempt) -> capability of every dispatch decided and not yet recorded.
        self.decided: dict[tuple[str, int], str] = {}
        self.ended: list[RunEnded] = []
        #: (step id, attempt) of every dispatch record read so far.
        self.sent: set[tuple[str, int]] = set()

    def run(self, items: list[Any]) -> Mismatch | None:
        """Apply every fact, check every record; the first mismatch, or None."""
        last: Any = None
        for item in items:
            if isinstance(item, Dispatched):
                mismatch = self._check_dispatch(item, last)
                if mismatch is not None:
                    return mismatch
                continue
            self.facts += 1
            if isinstance(item, StepFinished):
                mismatch = self._check_sent(item)
                if mismatch is not None:
                    return mismatch
            last = item
            for command in advance(self.engine, self.state, item):
                if isinstance(command, Dispatch):
                    self.decided[(command.step_id, command.attempt)] = command.capability
                elif isinstance(command, RunEnded):
                    self.ended.append(command)
            self.state.notes.clear()
        return None

    def _check_sent(self, fact: StepFinished) -> Mismatch | None:
        """An outcome must be of an attempt recorded as sent before it."""
        o = fact.outcome
        if (o.step_id, o.attempt) in self.sent:
            return None
        return Mismatch(fact_index=self.facts, fact=fact_about(fact)[0], step_id=o.step_id,
                        block=block_of(self.engine, self.state, o.step_id), signal=o.event, what="outcome",
                        recorded=f"an outcome of {o.step_id}#{o.attempt}",
                        now=f"{o.step_id}#{o.attempt} was never sent (no dispatch record before its outcome)")

    def _check_dispatch(self, record: Dispatched, last: Any) -> Mismatch | None:
        self.checked += 1
        self.sent.add((record.step_id, record.attempt))
        capability = self.decided.pop((record.step_id, record.attempt), None)
        if capability == record.capability:
            return None
        kind, _, _, signal = fact_about(last) if last is not None else ("", None, None, None)
        now = (f"dispatch {record.step_id}#{record.attempt} {capability}" if capability is not None
               else f"no dispatch of {record.step_id}#{record.attempt} was decided")
        return Mismatch(fact_index=self.facts, fact=kind, step_id=record.step_id,
                        block=block_of(self.engine, self.state, record.step_id), signal=signal, what="dispatch",
                        recorded=f"dispatch {record.step_id}#{record.attempt} {record.capability}", now=now)


def _check_end(row: RunRow, state: Any, ends: int) -> Mismatch | None:
    """The run's row against the state the replay reached (and the RunEnded commands it gave)."""
    # A run waiting on an answer is unfinished in the journal: its row stays ``running``.
    if state.status != row.status and not (state.status == "suspended" and row.status == "running"):
        return Mismatch(fact_index=0, what="end", recorded=f"status {row.status}", now=f"status {state.status}"
                        + (f": {state.error}" if state.error else ""))
    if row.status != "running" and row.ended_ms != (state.ended_ms or 0):
        return Mismatch(fact_index=0, what="end", recorded=f"ended at {row.ended_ms} ms",
                        now=f"ended at {state.ended_ms} ms")
    if ends != (0 if row.status == "running" else 1):
        return Mismatch(fact_index=0, what="end", recorded=f"status {row.status}",
                        now=f"the engine ended the run {ends} times")
    return None
