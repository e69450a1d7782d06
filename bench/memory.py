"""W4's memory series: bytes the orchestrator holds per run in flight.

An orchestrator with no worker at all is given ``n`` runs of the 3-step workflow; each run's
first step finds no worker offering ``bench.noop`` and waits in the pending queue, so every
run stays in flight (the schedule-to-start limit is set far beyond the measurement). Two
figures per ``n``, each in its own pass over a fresh orchestrator:

* ``tracemalloc``: Python heap bytes allocated and still held after the ``n`` submissions
  (``tracemalloc`` current-size delta, after a ``gc.collect()``), over ``n``. Exact for Python
  objects; blind to allocator slack and to memory outside the Python heap.
* ``rss``: the process's resident set size delta over ``n`` (``/proc/self/statm``), measured
  without ``tracemalloc``. Includes allocator slack; can under-count when earlier, freed
  memory is reused, so read it as a rough cross-check.
"""

from __future__ import annotations

import gc
import os
import tracemalloc
import uuid
from typing import Any

import anyio

from ontoflow.actors.orchestrator import Orchestrator
from ontoflow.actors.orchestrator.engine import compile_workflow
from bench.noop import NoOp, linear_manifest
from bench.record import figure
from ontoflow.protocols import manifest_from_data
from ontoflow.runtime.transport import shared_context

__all__ = ["measure_memory"]

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * _PAGE
    except OSError:  # not Linux: the RSS figure is then reported as 0
        return 0


async def _one_pass(n: int, *, traced: bool) -> float:
    """Bytes per run held by an orchestrator with ``n`` runs queued."""
    workflow = compile_workflow(manifest_from_data(linear_manifest(3)), {NoOp.metadata.id: NoOp.metadata})
    orchestrator = Orchestrator(
        address=f"inproc://bench-memory-{uuid.uuid4().hex}", context=shared_context(), schedule_to_start_ms=3_600_000
    )
    async with anyio.create_task_group() as tg:
        await tg.start(orchestrator.run)
        gc.collect()
        if traced:
            tracemalloc.start()
            before = tracemalloc.get_traced_memory()[0]
        else:
            before = _rss_bytes()
        for _ in range(n):
            orchestrator.submit(workflow, {})
        await anyio.sleep(0)  # let the loop settle whatever the submissions scheduled
        gc.collect()
        if traced:
            after = tracemalloc.get_traced_memory()[0]
            tracemalloc.stop()
        else:
            after = _rss_bytes()
        in_flight = orchestrator.statistics()["runs_in_flight"]
        tg.cancel_scope.cancel()
    if in_flight != n:
        raise RuntimeError(f"expected {n} runs in flight, found {in_flight}")
    return (after - before) / n


async def measure_memory(counts: list[int], *, repeats: int) -> list[dict[str, Any]]:
    """Bytes per run in flight for each ``n`` in ``counts``; returns figure records.

    Raises:
        ValueError: when a count or ``repeats`` is below 1.
        RuntimeError: when the runs did not all stay in flight.
    """
    if repeats < 1 or any(n < 1 for n in counts):
        raise ValueError("counts and repeats must be >= 1")
    await _one_pass(min(counts), traced=False)  # warm-up: imports, caches, the zmq context
    records = []
    note = "orchestrator only, no worker: every run waits for its first step; 3-step workflow"
    for n in counts:
        traced = [await _one_pass(n, traced=True) for _ in range(repeats)]
        rss = [await _one_pass(n, traced=False) for _ in range(repeats)]
        params = {"runs_in_flight": n, "repeats": repeats}
        records.append(figure("ontoflow", "W4", "bytes_per_run_tracemalloc",
                              f"ontoflow: memory per run in flight, {n:,} runs (tracemalloc)", "B", traced,
                              params=params, note=note))
        records.append(figure("ontoflow", "W4", "bytes_per_run_rss",
                              f"ontoflow: memory per run in flight, {n:,} runs (RSS delta)", "B", rss,
                              params=params, note=note))
    return records
