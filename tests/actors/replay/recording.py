"""Journals written the way the orchestrator shell writes them, without a daemon.

:func:`record` drives a compiled document through the pure engine like the shell does: every
fact is journaled before it is applied, every Dispatch the engine decides is journaled as a
``dispatched`` record, the run's row is ended with the fact that ended it. The worker's answers
come from a script (step's capability -> event), so a test controls the run's path exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import msgspec

from ontoflow.actors.orchestrator import compile_document, encode_source
from ontoflow.actors.orchestrator.engine import Dispatch, RunEnded, RunSubmitted, StepFinished
from ontoflow.protocols import CapabilityMetadata
from ontoflow.protocols.messages import Outcome
from ontoflow.runtime.journal import CommitBatch, RunRow, open_journal

_encoder = msgspec.msgpack.Encoder()  # the shell's encoder (not the deterministic one)

CATALOG = {
    "t.load": CapabilityMetadata(id="t.load", events=["success", "failure", "empty"], outputs=["t.rows"]),
    "t.work": CapabilityMetadata(id="t.work", outputs=["t.done"]),
    "t.note": CapabilityMetadata(id="t.note", outputs=["t.noted"]),
}


def workflow(*, on_success: str = "CALL:sub") -> dict[str, Any]:
    """``main.load`` -> (CALL) ``sub.work`` -> RETURN -> ``main.note``; ``empty`` jumps to ``note``."""
    return {
        "name": "rec",
        "start": "main",
        "nodes": {
            "main": {"entry_block": "load", "blocks": {
                "load": {"worker": "t.load", "transitions": [{"on_signal": "success", "action": on_success},
                                                             {"on_signal": "empty", "action": "JUMP:note"}]},
                "note": {"worker": "t.note"},
            }},
            "sub": {"entry_block": "work", "blocks": {
                "work": {"worker": "t.work", "transitions": [{"on_signal": "success", "action": "RETURN"}]},
            }},
        },
    }


def plan() -> dict[str, Any]:
    """``a`` -> (``b``, ``c``): a DAG of three steps."""
    return {"name": "rec-plan", "steps": [
        {"id": "a", "capability": "t.load"},
        {"id": "b", "capability": "t.work", "depends_on": ["a"]},
        {"id": "c", "capability": "t.note", "depends_on": ["a"]},
    ]}


def record(
    path: Path,
    document: Mapping[str, Any],
    *,
    run_id: str = "r1",
    events: Mapping[str, str] | None = None,
    tamper: Callable[[Dispatch], tuple[str, int, str, str]] | None = None,
    stop_after: int | None = None,
) -> None:
    """Run ``document`` through the engine and journal it in ``path`` as the shell would.

    Args:
        path: the journal (created or appended to).
        document: a workflow manifest or a plan.
        run_id: the run's id.
        events: capability id -> the event its steps end with (``success`` otherwise).
        tamper: makes the ``dispatched`` record of a Dispatch (to write a wrong one).
        stop_after: stop answering after this many outcomes (an unfinished run).
    """
    compiled = compile_document(document, CATALOG)
    source_hash, body = encode_source(document, compiled, kind=compiled.kind)
    state = compiled.new_run(run_id)
    batch = CommitBatch()
    batch.sources[source_hash] = body
    batch.runs.append(RunRow(run_id=run_id, source_hash=source_hash, submitted_ms=1_000, name=compiled.name))
    queue: list[Dispatch] = []
    now = 1_000

    def apply(fact: Any) -> None:
        batch.fact(run_id, "fact", fact.now_ms, _encoder.encode(fact))
        for command in compiled.advance(state, fact):
            if isinstance(command, Dispatch):
                record = tamper(command) if tamper else (command.step_id, command.attempt, command.capability, "w1")
                batch.fact(run_id, "dispatched", fact.now_ms, _encoder.encode(record))
                queue.append(command)
            elif isinstance(command, RunEnded):
                batch.end(run_id, command.status, state.ended_ms or 0)

    apply(RunSubmitted(run_id=run_id, inputs={"t.in": 1}, now_ms=now))
    answered = 0
    while queue and (stop_after is None or answered < stop_after):
        d = queue.pop(0)
        now += 7
        event = (events or {}).get(d.capability, "success")
        outputs = {key: d.step_id for key in CATALOG[d.capability].outputs} if event == "success" else {}
        apply(StepFinished(outcome=Outcome(run_id=run_id, step_id=d.step_id, attempt=d.attempt, event=event,
                                           outputs=outputs), now_ms=now))
        answered += 1
    with open_journal(path) as journal:
        journal.commit(batch)
