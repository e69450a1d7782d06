"""What a daemon keeps of documents once their runs ended, and of documents it compiled.

Ended runs are kept for their clients (10,000 by default) and compiled documents in a cache
(256): each ended run held its compiled document, and the cache was bounded by count only, so
distinct documents of 20 MB each (a workflow's static memory) grew a daemon by 180 MB a run.
"""

from __future__ import annotations

import gc
import tracemalloc
import weakref

import msgspec

from ontoflow.actors.orchestrator import Run, RunTable
from ontoflow.actors.orchestrator._documents import SubmittedDocuments
from ontoflow.actors.orchestrator._registry import WorkerRegistry
from ontoflow.actors.orchestrator.engine import RunCancelled, RunEnded, RunSubmitted, StepFinished
from ontoflow.protocols import CapabilityMetadata, Outcome

from tests.actors.orchestrator.parts import one_step


class _Big:
    """A value a compiled document holds, whose going away a test can see."""


def test_an_ended_run_lets_its_compiled_document_go_and_still_notes_what_comes_late() -> None:
    workflow = one_step()
    big = _Big()
    workflow.defaults["t.big"] = big  # what the compiled document holds (its defaults, here)
    gone = weakref.ref(big)
    del big
    table = RunTable()
    run = Run(workflow, "r1")
    table.add(run)
    [d] = table.advance(run, RunSubmitted(run_id="r1", inputs={}, now_ms=0))
    outcome = Outcome(run_id="r1", step_id=d.step_id, attempt=d.attempt, event="success")
    [ended] = table.advance(run, StepFinished(outcome=outcome, now_ms=5))
    assert isinstance(ended, RunEnded)
    table.end(run, ended)
    name, kind = workflow.name, workflow.kind
    del workflow, d
    gc.collect()
    assert gone() is None  # before: held by the ended run for as long as clients may read it
    assert (run.engine.kind, run.engine.name) == (kind, name)
    assert run.engine.in_flight(run.state) == [] and run.engine.suspensions(run.state) == []
    assert table.advance(run, RunCancelled(reason="late", now_ms=9)) == []
    assert table.advance(run, StepFinished(outcome=outcome, now_ms=9)) == []
    assert table.get("r1") is run and run.result is not None and run.result.status == "completed"


def test_the_documents_kept_are_bounded_in_bytes_not_only_in_number() -> None:
    registry = WorkerRegistry()
    registry.know([CapabilityMetadata(id="test.any", timeout_ms=1_000)])
    documents = SubmittedDocuments(registry, {})

    def doc(i: int) -> msgspec.Raw:
        return msgspec.Raw(msgspec.msgpack.encode({"name": f"d{i}", "start": "m", "nodes": {"m": {
            "entry_block": "a", "static_memory": {"t.blob": "x" * 20_000_000},
            "blocks": {"a": {"worker": "test.any"}}}}}))

    first = documents.compile(doc(0))[0]
    assert documents.compile(doc(0))[0] is first  # kept
    del first
    tracemalloc.start()
    try:
        for i in range(1, 9):  # 160 MB of documents (each about 50 MB kept: decoded, pinned): past the 64 MiB kept
            documents.compile(doc(i))
        gc.collect()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Before: all of them (256 such documents: 10 GB here, 46 GB of a list of numbers).
    assert held < 160_000_000, held  # two documents at most (they were 400 MB)
