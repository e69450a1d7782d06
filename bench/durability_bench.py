"""Figures of the durable daemon (issue 4): journal cost, memory per run in flight, recovery time.

Each function returns a dict (the suite turns it into figure records)::

    measure_journal_overhead(runs=2000, steps=3, concurrency=200)
        -> {"steps_per_s_off", "steps_per_s_on", "ratio", "overhead_pct", "steps", "commits"}
    measure_memory_per_run(runs=10_000)
        -> {"runs", "bytes_per_run", "kb_per_run"}
    measure_recovery(finished=100_000, unfinished=1_000)
        -> {"finished", "unfinished", "open_s", "recover_s", "total_s", "journal_mb"}

Run: ``.venv/bin/python -m bench.durability_bench`` (prints the three dicts as JSON).

The journal's cost in W5 moves by a third with the machine's load; ``python -m
bench.journal_instructions --callgrind --workload w5`` counts it in instructions per run
(journal off and on, W5's own workload), steady to a fraction of a percent.
"""

from __future__ import annotations

import gc
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import anyio
import msgspec
import structlog

from ontoflow.actors.orchestrator import Orchestrator, encode_source
from ontoflow.actors.orchestrator.engine import RunSubmitted, StepFinished, compile_workflow
from ontoflow.actors.worker import WorkerHost
from bench.noop import NoOp, linear_manifest
from ontoflow.protocols.manifest import manifest_from_data
from ontoflow.protocols.messages import Outcome
from ontoflow.runtime.journal import CommitBatch, RunRow, open_journal
from ontoflow.runtime.transport import shared_context

__all__ = ["measure_journal_overhead", "measure_memory_per_run", "measure_recovery"]

log = structlog.get_logger()


def _workflow(steps: int) -> tuple[Any, tuple[str, bytes]]:
    document = linear_manifest(steps)
    workflow = compile_workflow(manifest_from_data(document), {NoOp.metadata.id: NoOp.metadata})
    return workflow, encode_source(document, workflow)


async def _steps_per_s(journal_path: Path | None, runs: int, steps: int, concurrency: int) -> tuple[float, int]:
    workflow, source = _workflow(steps)
    journal = open_journal(journal_path) if journal_path is not None else None
    try:
        context = shared_context()
        address = f"inproc://durability-{time.perf_counter_ns()}"
        async with anyio.create_task_group() as tg:
            orch = await tg.start(Orchestrator(address=address, context=context, journal=journal).run)
            worker = WorkerHost([NoOp()], address=orch.address, context=context, worker_id="bench", slots=concurrency)
            tg.start_soon(worker.run)
            await orch.wait_for_capabilities([NoOp.metadata.id])
            limiter = anyio.Semaphore(concurrency)

            async def one() -> None:
                async with limiter:
                    run_id = await orch.asubmit(workflow, {}, source=source)
                    await orch.result(run_id)
                    orch.forget(run_id)

            started = time.perf_counter()
            async with anyio.create_task_group() as runs_tg:
                for _ in range(runs):
                    runs_tg.start_soon(one)
            elapsed = time.perf_counter() - started
            commits = journal.commits if journal is not None else 0
            tg.cancel_scope.cancel()
    finally:
        if journal is not None:
            journal.close()
    return runs * steps / elapsed, commits


def measure_journal_overhead(runs: int = 2000, steps: int = 3, concurrency: int = 200) -> dict[str, Any]:
    """Steps/s of the same workload with the journal off and on, in one process, one run each.

    An orchestrator and an in-process worker host (``inproc://``, ``bench.noop``) run ``runs``
    linear runs of ``steps`` no-op steps, ``concurrency`` at a time.
    """
    with tempfile.TemporaryDirectory() as tmp:
        anyio.run(_steps_per_s, None, 50, steps, concurrency, backend="asyncio")  # warm-up
        off, _ = anyio.run(_steps_per_s, None, runs, steps, concurrency, backend="asyncio")
        on, commits = anyio.run(_steps_per_s, Path(tmp) / "j.sqlite", runs, steps, concurrency, backend="asyncio")
    return {"steps_per_s_off": off, "steps_per_s_on": on, "ratio": on / off, "overhead_pct": (1 - on / off) * 100,
            "steps": runs * steps, "commits": commits}


def measure_memory_per_run(runs: int = 10_000) -> dict[str, Any]:
    """Bytes per run in flight: ``runs`` journaled runs each waiting for a worker (tracemalloc)."""
    workflow, source = _workflow(3)
    with tempfile.TemporaryDirectory() as tmp:
        journal = open_journal(Path(tmp) / "j.sqlite")
        try:
            orch = Orchestrator(address="inproc://unused", journal=journal)
            gc.collect()
            tracemalloc.start()
            before = tracemalloc.get_traced_memory()[0]
            for _ in range(runs):
                orch.submit(workflow, {"bench.take_branch": False}, source=source)
            gc.collect()
            after = tracemalloc.get_traced_memory()[0]
            tracemalloc.stop()
            assert orch.runs_in_flight == runs
        finally:
            journal.close()
    per_run = (after - before) / runs
    return {"runs": runs, "bytes_per_run": per_run, "kb_per_run": per_run / 1024}


def _fill(path: Path, finished: int, unfinished: int) -> None:
    workflow, (source_hash, body) = _workflow(1)
    encode = msgspec.msgpack.Encoder().encode
    journal = open_journal(path)
    try:
        first = True
        for start in range(0, finished + unfinished, 10_000):
            batch = CommitBatch()
            if first:
                batch.sources[source_hash] = body
                first = False
            for n in range(start, min(start + 10_000, finished + unfinished)):
                run_id = f"run{n:08d}"
                now = 1_000 + n
                batch.runs.append(RunRow(run_id=run_id, source_hash=source_hash, submitted_ms=now, name="bench"))
                batch.fact(run_id, "fact", now, encode(RunSubmitted(run_id=run_id, inputs={}, now_ms=now)))
                batch.fact(run_id, "dispatched", now, encode(("s1", 1, NoOp.metadata.id, "w")))
                if n < finished:
                    outcome = Outcome(run_id=run_id, step_id="s1", attempt=1, event="success", duration_ms=0.1)
                    batch.fact(run_id, "fact", now + 1, encode(StepFinished(outcome=outcome, now_ms=now + 1)))
                    batch.end(run_id, "completed", now + 1)
            journal.commit(batch)
    finally:
        journal.close()
    del workflow


def measure_recovery(finished: int = 100_000, unfinished: int = 1_000) -> dict[str, Any]:
    """Time to open a journal of ``finished`` ended and ``unfinished`` running runs and recover.

    The unfinished runs each have a step recorded as dispatched, so recovery replays them and
    re-dispatches every one (as a new attempt: ``bench.noop`` is idempotent).
    """
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "j.sqlite"
        _fill(path, finished, unfinished)
        size = path.stat().st_size + (path.with_name("j.sqlite-wal").stat().st_size if path.with_name("j.sqlite-wal").exists() else 0)
        started = time.perf_counter()
        journal = open_journal(path)
        opened = time.perf_counter()
        try:
            orch = Orchestrator(address="inproc://unused", journal=journal, clock=lambda: 10_000_000)
            report = orch.recover(10_000_000)
            done = time.perf_counter()
        finally:
            journal.close()
    assert report.runs == unfinished and report.interrupted == unfinished
    return {"finished": finished, "unfinished": unfinished, "open_s": opened - started, "recover_s": done - opened,
            "total_s": done - started, "journal_mb": size / 1e6}


if __name__ == "__main__":
    import json

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    print(json.dumps({"journal_overhead": measure_journal_overhead()}))
    print(json.dumps({"memory_per_run": measure_memory_per_run()}))
    print(json.dumps({"recovery": measure_recovery()}))
