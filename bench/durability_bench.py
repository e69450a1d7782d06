"""Figures of the durable daemon (issue 4): journal cost, memory per run in flight, recovery time.

Each function returns a dict (the suite turns it into figure records)::

    measure_journal_overhead(runs=2000, steps=3, concurrency=200, *, pairs=1, warm=None, method="paired")
        -> {"steps_per_s_off", "steps_per_s_on", "ratio", "overhead_pct", "steps", "commits", ...}
    measure_memory_per_run(runs=10_000)
        -> {"runs", "bytes_per_run", "kb_per_run"}
    measure_recovery(finished=100_000, unfinished=1_000)
        -> {"finished", "unfinished", "open_s", "recover_s", "total_s", "journal_mb"}

Run: ``.venv/bin/python -m bench.durability_bench`` (prints the three dicts as JSON);
``--w5 --repeat 5 [--method sequential] [--runs N] [--pairs P]``: only the journal's cost.

The journal's cost in W5 moves by a third with the machine's load; ``python -m
bench.journal_instructions --callgrind --workload w5`` counts it in instructions per run
(journal off and on, W5's own workload), steady to a fraction of a percent.
"""

from __future__ import annotations

import gc
import itertools
import statistics
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

__all__ = ["main", "measure_journal_overhead", "measure_memory_per_run", "measure_recovery"]

log = structlog.get_logger()


def _workflow(steps: int) -> tuple[Any, tuple[str, bytes]]:
    document = linear_manifest(steps)
    workflow = compile_workflow(manifest_from_data(document), {NoOp.metadata.id: NoOp.metadata})
    return workflow, encode_source(document, workflow)


async def _steps_per_s(journal_path: Path | None, runs: int, steps: int, concurrency: int,
                       warm: int = 0) -> tuple[float, int, float]:
    """Steps/s of ``runs`` runs through a fresh orchestrator, after ``warm`` runs through it
    untimed (its journal's statements prepared, its pages cached); the timed runs' commits; and
    steps per CPU second of the process (what other processes' load moves far less)."""
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

            async def batch(count: int) -> None:
                async with anyio.create_task_group() as runs_tg:
                    for _ in range(count):
                        runs_tg.start_soon(one)

            if warm:
                await batch(warm)
            before = journal.commits if journal is not None else 0
            started, cpu = time.perf_counter(), time.process_time()
            await batch(runs)
            elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
            commits = journal.commits - before if journal is not None else 0
            tg.cancel_scope.cancel()
    finally:
        if journal is not None:
            journal.close()
    return runs * steps / elapsed, commits, runs * steps / cpu


def _window(journal_on: bool, tmp: str, n: int, runs: int, steps: int, concurrency: int,
            warm: int) -> tuple[float, int, float]:
    path = Path(tmp) / f"j{n}.sqlite" if journal_on else None
    return anyio.run(_steps_per_s, path, runs, steps, concurrency, warm, backend="asyncio")


#: Calls of ``measure_journal_overhead`` so far: a call of one pair starts with the journal off
#: when even, on when odd, so that repeated calls (the suite's repetitions) alternate the order.
_calls = itertools.count()


def measure_journal_overhead(runs: int = 2000, steps: int = 3, concurrency: int = 200, *, pairs: int = 1,
                             warm: int | None = None, method: str = "paired") -> dict[str, Any]:
    """Steps/s of the same workload with the journal off and on, in one process.

    An orchestrator and an in-process worker host (``inproc://``, ``bench.noop``) run ``runs``
    linear runs of ``steps`` no-op steps, ``concurrency`` at a time.

    ``method="paired"``: ``pairs`` pairs of windows, one off and one on, timed in turn, their
    order alternating from pair to pair (and from call to call) so that a drift of the machine's
    load falls on both alike; each window is preceded by ``warm`` runs (default a tenth of
    ``runs``, at least 50) through the same orchestrator and journal, untimed. The cost is one
    minus the median of the pairs' ratios (on / off); ``steps_per_s_off``/``_on`` are medians;
    ``cpu_overhead_pct`` is the same in steps per CPU second of the process (the workload is
    CPU-bound: uncontended, the two agree; on a loaded machine the CPU one moves far less).
    ``method="sequential"``: the method before session 16 (one warm-up of 50 runs with the
    journal off, then one window off and one on, the on one including the journal's first
    commits), kept to compare the two on the same code.
    """
    with tempfile.TemporaryDirectory() as tmp:
        if method == "sequential":
            anyio.run(_steps_per_s, None, 50, steps, concurrency, backend="asyncio")  # warm-up
            off, _, _ = anyio.run(_steps_per_s, None, runs, steps, concurrency, backend="asyncio")
            on, commits, _ = anyio.run(_steps_per_s, Path(tmp) / "j.sqlite", runs, steps, concurrency, backend="asyncio")
            return {"steps_per_s_off": off, "steps_per_s_on": on, "ratio": on / off, "overhead_pct": (1 - on / off) * 100,
                    "steps": runs * steps, "commits": commits, "method": method}
        if method != "paired":
            raise ValueError(f"unknown method {method!r}")
        warm = max(runs // 10, 50) if warm is None else warm
        first_on = next(_calls) % 2 == 1
        offs, ons, ratios, cpu_ratios, commits = [], [], [], [], 0
        for n in range(pairs):
            rates, cpu = {}, {}
            for journal_on in (True, False) if (n % 2 == 1) != first_on else (False, True):
                rates[journal_on], made, cpu[journal_on] = _window(journal_on, tmp, n, runs, steps, concurrency, warm)
                commits += made
            offs.append(rates[False])
            ons.append(rates[True])
            ratios.append(rates[True] / rates[False])
            cpu_ratios.append(cpu[True] / cpu[False])
    ratio = statistics.median(ratios)
    return {"steps_per_s_off": statistics.median(offs), "steps_per_s_on": statistics.median(ons), "ratio": ratio,
            "overhead_pct": (1 - ratio) * 100, "overhead_pcts": [(1 - r) * 100 for r in ratios],
            "cpu_overhead_pct": (1 - statistics.median(cpu_ratios)) * 100,
            "steps": runs * steps, "commits": commits // pairs, "method": method, "pairs": pairs, "warm": warm}


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


def main(argv: list[str] | None = None) -> None:
    """Print the three figures, or (``--w5``) only the journal's cost, ``--repeat`` times."""
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="python -m bench.durability_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--w5", action="store_true", help="only the journal's cost (W5)")
    parser.add_argument("--method", choices=("paired", "sequential"), default="paired")
    parser.add_argument("--runs", type=int, default=2000, help="runs per window (default 2000)")
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--pairs", type=int, default=1, help="off/on pairs per reading (paired; default 1)")
    parser.add_argument("--repeat", type=int, default=1, help="readings (default 1)")
    args = parser.parse_args(argv)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    options = {"pairs": args.pairs} if args.method == "paired" else {}
    for _ in range(args.repeat):
        print(json.dumps({"journal_overhead": measure_journal_overhead(
            runs=args.runs, concurrency=args.concurrency, method=args.method, **options)}), flush=True)
    if not args.w5:
        print(json.dumps({"memory_per_run": measure_memory_per_run()}))
        print(json.dumps({"recovery": measure_recovery()}))


if __name__ == "__main__":
    main()
