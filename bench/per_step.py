"""W1 and W4's run-length series: ontoflow's latency, one run at a time.

A linear workflow of no-op steps (``bench.noop.linear_manifest``) runs to its end before the
next one is submitted; every step crosses to a worker process over ``ipc://`` and back. The
per-step figure of a repetition is its wall time over the steps it ran; the per-run median
and p99 come from every run of every repetition, and per step they are those over ``steps``
(one run at a time, so a run's time is the sum of its steps').

The sync floor can be timed between the repetitions (``floor``): on a shared machine whose speed
drifts by a third within minutes, a ratio is only meaningful between figures taken together.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio

from bench._stats import percentile
from bench.record import figure
from runtime.embedded import LocalCluster

__all__ = ["measure_latency"]


async def measure_latency(
    cluster: LocalCluster, workflow: Any, *, steps: int, runs: int, repeats: int, workers: int,
    floor: Callable[[int], float] | None = None, floor_n: int = 10_000,
) -> list[dict[str, Any]]:
    """Run ``runs`` sequential runs ``repeats`` times after a warm-up; returns figure records.

    Records: ``per_step_us`` (per repetition), ``run_p50_us`` and ``run_p99_us``. With
    ``floor`` (``bench.floor.open_sync_pingpong``'s ``run``), ``floor_n`` blocking round trips
    are timed before each repetition, in a worker thread, and a ``floor-sync`` ``per_step_us``
    record comes first: the floor and ontoflow then see the same minutes of a shared machine.

    Raises:
        ValueError: when ``runs`` or ``repeats`` is below 1.
        RuntimeError: when a run does not complete.
    """
    if runs < 1 or repeats < 1:
        raise ValueError(f"runs and repeats must be >= 1, got {runs} and {repeats}")
    for _ in range(max(runs // 10, 5)):  # warm-up: connections, caches, the allocator
        await _one(cluster, workflow)
    per_step: list[float] = []
    floor_us: list[float] = []
    run_us: list[float] = []
    for _ in range(repeats):
        if floor is not None:
            floor_us.append(await anyio.to_thread.run_sync(floor, floor_n) * 1e6 / floor_n)
        start = time.perf_counter()
        for _ in range(runs):
            run_us.append(await _one(cluster, workflow))
        per_step.append((time.perf_counter() - start) * 1e6 / (runs * steps))
    params = {"steps": steps, "runs": runs, "repeats": repeats, "workers": workers, "transport": "ipc"}
    note = "orchestrator in this process, each step in a worker process over ipc"
    label = f"ontoflow: {steps}-step linear run, one at a time"
    p50, p99 = percentile(run_us, 50), percentile(run_us, 99)
    floors = []
    if floor_us:
        floors.append(figure(
            "floor-sync", "W1", "per_step_us", "floor sync: ping-pong, 1 echo process, timed in turn with ontoflow's W1",
            "us", floor_us, params={"n": floor_n, "interleaved_with": label},
            note="plain pyzmq + msgspec, DEALER -> ROUTER echo process over ipc, no ontoflow code; "
                 "each repetition right before one of ontoflow's",
        ))
    if steps != 3:  # W4's run-length series: the per-step cost is the figure
        return floors + [figure("ontoflow", "W4", "per_step_us", f"{label}, per step", "us", per_step, params=params, note=note)]
    return floors + [
        figure("ontoflow", "W1", "per_step_us", f"{label}, per step", "us", per_step, params=params, note=note),
        figure("ontoflow", "W1", "run_p50_us", f"{label}, per run p50 (per step {p50 / steps:.0f} us)", "us", [p50],
               params=params, note=note, per_step_us=p50 / steps),
        figure("ontoflow", "W1", "run_p99_us", f"{label}, per run p99 (per step {p99 / steps:.0f} us)", "us", [p99],
               params=params, note=note, per_step_us=p99 / steps),
    ]


async def _one(cluster: LocalCluster, workflow: Any) -> float:
    t0 = time.perf_counter()
    result = await cluster.run(workflow, {})
    elapsed = (time.perf_counter() - t0) * 1e6
    if result.status != "completed":
        raise RuntimeError(f"a benchmark run ended {result.status}")
    return elapsed
