"""W1 and W4's run-length series: ontoflow's latency, one run at a time.

A linear workflow of no-op steps (``bench.noop.linear_manifest``) runs to its end before the
next one is submitted; every step crosses to a worker process over ``ipc://`` and back. The
per-step figure of a repetition is its wall time over the steps it ran; the per-run median
and p99 come from every run of every repetition, and per step they are those over ``steps``
(one run at a time, so a run's time is the sum of its steps').

The run lengths take their repetitions in turn, and the sync floor can be timed at the start of
each round (``floor``): on a shared machine whose speed drifts by a third within minutes, a
ratio is only meaningful between figures taken together.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio

from bench._stats import percentile
from bench.record import figure
from ontoflow.runtime.embedded import LocalCluster

__all__ = ["measure_latency"]


async def measure_latency(
    cluster: LocalCluster, series: list[tuple[int, Any, int]], *, repeats: int, workers: int,
    floor: Callable[[int], float] | None = None, floor_n: int = 10_000,
) -> list[dict[str, Any]]:
    """Time sequential runs of each ``(steps, workflow, runs)`` of ``series``; figure records.

    Each run length gets a warm-up, then ``repeats`` rounds time one repetition of every run
    length in turn (``runs`` runs one after the other): the per-step cost of 3, 30 and 300-step
    runs is then compared within the same minutes. Records: ``per_step_us`` per run length (W1
    for 3 steps, W4's run-length series otherwise), and for 3 steps ``run_p50_us`` and
    ``run_p99_us``. With ``floor`` (``bench.floor.open_sync_pingpong``'s ``run``), ``floor_n``
    blocking round trips are timed at the start of each round, in a worker thread, and a
    ``floor-sync`` ``per_step_us`` record comes first.

    Raises:
        ValueError: when ``series`` is empty, or ``runs`` or ``repeats`` is below 1.
        RuntimeError: when a run does not complete.
    """
    if not series or repeats < 1 or any(runs < 1 for _, _, runs in series):
        raise ValueError(f"series must not be empty, and runs and repeats must be >= 1 (repeats {repeats})")
    for _, workflow, runs in series:
        for _ in range(max(runs // 10, 5)):  # warm-up: connections, caches, the allocator
            await _one(cluster, workflow)
    per_step: dict[int, list[float]] = {steps: [] for steps, _, _ in series}
    run_us: dict[int, list[float]] = {steps: [] for steps, _, _ in series}
    floor_us: list[float] = []
    for _ in range(repeats):
        if floor is not None:
            floor_us.append(await anyio.to_thread.run_sync(floor, floor_n) * 1e6 / floor_n)
        for steps, workflow, runs in series:
            start = time.perf_counter()
            for _ in range(runs):
                run_us[steps].append(await _one(cluster, workflow))
            per_step[steps].append((time.perf_counter() - start) * 1e6 / (runs * steps))
    note = "orchestrator in this process, each step in a worker process over ipc"
    if len(series) > 1:
        note += "; repetitions taken in turn with the other run lengths"
    records = []
    if floor_us:
        records.append(figure(
            "floor-sync", "W1", "per_step_us", "floor sync: ping-pong, 1 echo process, timed in turn with ontoflow's W1",
            "us", floor_us, params={"n": floor_n, "interleaved_with": "ontoflow's linear runs, one at a time"},
            note="plain pyzmq + msgspec, DEALER -> ROUTER echo process over ipc, no ontoflow code; "
                 "each repetition right before a round of ontoflow's",
        ))
    for steps, _, runs in series:
        params = {"steps": steps, "runs": runs, "repeats": repeats, "workers": workers, "transport": "ipc"}
        label = f"ontoflow: {steps}-step linear run, one at a time"
        if steps != 3:  # W4's run-length series: the per-step cost is the figure
            records.append(figure("ontoflow", "W4", "per_step_us", f"{label}, per step", "us", per_step[steps],
                                  params=params, note=note))
            continue
        p50, p99 = percentile(run_us[steps], 50), percentile(run_us[steps], 99)
        records += [
            figure("ontoflow", "W1", "per_step_us", f"{label}, per step", "us", per_step[steps], params=params, note=note),
            figure("ontoflow", "W1", "run_p50_us", f"{label}, per run p50 (per step {p50 / steps:.0f} us)", "us", [p50],
                   params=params, note=note, per_step_us=p50 / steps),
            figure("ontoflow", "W1", "run_p99_us", f"{label}, per run p99 (per step {p99 / steps:.0f} us)", "us", [p99],
                   params=params, note=note, per_step_us=p99 / steps),
        ]
    return records


async def _one(cluster: LocalCluster, workflow: Any) -> float:
    t0 = time.perf_counter()
    result = await cluster.run(workflow, {})
    elapsed = (time.perf_counter() - t0) * 1e6
    if result.status != "completed":
        raise RuntimeError(f"a benchmark run ended {result.status}")
    return elapsed
