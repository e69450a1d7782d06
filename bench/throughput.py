"""W2 and W4's worker series: ontoflow's throughput with many runs in flight.

``in_flight`` anyio tasks share a budget of ``runs``; each submits a run, awaits its result,
forgets it and takes the next, so the orchestrator always holds about ``in_flight`` runs.
Steps per second = runs x steps per run / wall time of the whole batch.
"""

from __future__ import annotations

import time
from typing import Any

import anyio

from bench.record import figure
from runtime.embedded import LocalCluster

__all__ = ["measure_throughput"]


async def _batch(cluster: LocalCluster, workflow: Any, runs: int, in_flight: int) -> float:
    """Seconds to complete ``runs`` runs with ``in_flight`` of them in flight."""
    orchestrator = cluster.orchestrator
    remaining = runs
    failed: list[str] = []

    async def client() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            run_id = orchestrator.submit(workflow, {})
            result = await orchestrator.result(run_id)
            orchestrator.forget(run_id)
            if result.status != "completed":
                failed.append(result.status)

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(min(in_flight, runs)):
            tg.start_soon(client)
    elapsed = time.perf_counter() - start
    if failed:
        raise RuntimeError(f"{len(failed)} benchmark runs did not complete (first: {failed[0]})")
    return elapsed


async def measure_throughput(
    cluster: LocalCluster, workflow: Any, *, steps: int, runs: int, in_flight: int, repeats: int, workers: int,
    workload: str = "W2",
) -> dict[str, Any]:
    """Steps per second over ``repeats`` batches of ``runs`` runs after a warm-up batch.

    Raises:
        ValueError: when a count is below 1.
        RuntimeError: when a run does not complete.
    """
    for name, value in (("runs", runs), ("in_flight", in_flight), ("repeats", repeats)):
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    await _batch(cluster, workflow, max(runs // 10, in_flight), in_flight)
    rates = [runs * steps / await _batch(cluster, workflow, runs, in_flight) for _ in range(repeats)]
    return figure(
        "ontoflow", workload, "steps_per_s",
        f"ontoflow: {runs:,} runs x {steps} steps, {in_flight} in flight, {workers} worker process(es)",
        "steps/s", rates, better="higher",
        params={"runs": runs, "steps": steps, "in_flight": in_flight, "workers": workers, "repeats": repeats},
        note="orchestrator in this process, steps in worker processes over ipc",
    )
