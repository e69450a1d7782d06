"""W2 and W4's worker series: ontoflow's throughput with many runs in flight.

A driver keeps ``in_flight`` runs in the orchestrator until ``runs`` have been submitted:
each run that ends is forgotten and replaced by a new one.
Steps per second = runs x steps per run / wall time of the whole batch.
"""

from __future__ import annotations

import time
from typing import Any

import anyio

from bench.record import figure
from ontoflow.runtime.embedded import LocalCluster

__all__ = ["measure_throughput", "measure_throughput_interleaved"]


async def _batch(cluster: LocalCluster, workflow: Any, runs: int, in_flight: int) -> float:
    """Seconds to complete ``runs`` runs with ``in_flight`` of them in flight.

    One driver task keeps the window full: the orchestrator's ``on_run_ended`` hook collects
    the runs that ended and wakes it, and it submits as many new ones. (A task per run in
    flight awaiting its ``result`` measures anyio's task switches as much as ontoflow: one
    wake-up per run instead of one per batch of ended runs.)
    """
    orchestrator = cluster.orchestrator
    ended: list[Any] = []
    woken = [anyio.Event()]
    failed: list[str] = []

    def on_run_ended(result: Any) -> None:
        ended.append(result)
        woken[0].set()

    orchestrator.on_run_ended.append(on_run_ended)
    try:
        start = time.perf_counter()
        submitted = finished = 0
        while submitted < min(in_flight, runs):
            orchestrator.submit(workflow, {})
            submitted += 1
        while finished < runs:
            await woken[0].wait()
            woken[0] = anyio.Event()
            batch, ended[:] = list(ended), []
            for result in batch:
                finished += 1
                orchestrator.forget(result.run_id)
                if result.status != "completed":
                    failed.append(result.status)
                if submitted < runs:
                    orchestrator.submit(workflow, {})
                    submitted += 1
        elapsed = time.perf_counter() - start
    finally:
        orchestrator.on_run_ended.remove(on_run_ended)
    if failed:
        raise RuntimeError(f"{len(failed)} benchmark runs did not complete (first: {failed[0]})")
    return elapsed


async def measure_throughput(
    cluster: LocalCluster, workflow: Any, *, steps: int, runs: int, in_flight: int, repeats: int, workers: int,
    workload: str = "W2", slots: int | None = None,
) -> dict[str, Any]:
    """Steps per second over ``repeats`` batches of ``runs`` runs after a warm-up batch.

    Raises:
        ValueError: when a count is below 1.
        RuntimeError: when a run does not complete.
    """
    [record] = await measure_throughput_interleaved(
        [(cluster, workflow, workers, slots, workload)], steps=steps, runs=runs, in_flight=in_flight, repeats=repeats,
    )
    return record


async def measure_throughput_interleaved(
    setups: list[tuple[LocalCluster, Any, int, int | None, str]], *, steps: int, runs: int, in_flight: int, repeats: int,
) -> list[dict[str, Any]]:
    """Steps per second of several clusters, their batches taken in turn.

    ``setups`` holds ``(cluster, workflow, workers, slots, workload)``. Each cluster gets a
    warm-up batch, then ``repeats`` rounds time one batch of each cluster after the other: a
    comparison between worker counts then holds even when the machine's speed drifts.

    Returns:
        One figure record per setup, in order.

    Raises:
        ValueError: when a count is below 1.
        RuntimeError: when a run does not complete.
    """
    for name, value in (("runs", runs), ("in_flight", in_flight), ("repeats", repeats)):
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    for cluster, workflow, *_ in setups:
        await _batch(cluster, workflow, max(runs // 10, in_flight), in_flight)
    rates: list[list[float]] = [[] for _ in setups]
    for _ in range(repeats):
        for i, (cluster, workflow, *_) in enumerate(setups):
            rates[i].append(runs * steps / await _batch(cluster, workflow, runs, in_flight))
    return [
        _throughput_figure(samples, steps=steps, runs=runs, in_flight=in_flight, repeats=repeats, workers=workers,
                           workload=workload, slots=slots, interleaved=len(setups) > 1)
        for samples, (_, _, workers, slots, workload) in zip(rates, setups, strict=True)
    ]


def _throughput_figure(
    rates: list[float], *, steps: int, runs: int, in_flight: int, repeats: int, workers: int, workload: str,
    slots: int | None, interleaved: bool,
) -> dict[str, Any]:
    note = "orchestrator in this process, steps in worker processes over ipc (nice +10: the local cluster's default)"
    if interleaved:
        note += "; batches taken in turn with the other worker counts' clusters"
    return figure(
        "ontoflow", workload, "steps_per_s",
        f"ontoflow: {runs:,} runs x {steps} steps, {in_flight} in flight, {workers} worker process(es)"
        + ("" if slots is None else f" x {slots} slots"),
        "steps/s", rates, better="higher",
        params={"runs": runs, "steps": steps, "in_flight": in_flight, "workers": workers, "repeats": repeats, "slots": slots},
        note=note,
    )
