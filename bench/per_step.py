"""ontoflow's per-step cost: a linear workflow of no-op steps, one run at a time, with the
capability actor in another process over ipc:// (the embedded default)."""

from __future__ import annotations

import statistics
import time
from typing import Any

import anyio

from actors.capability import load_capabilities
from bench.noop import linear_manifest
from protocols import manifest_from_data
from runtime.embedded import open_local_cluster

__all__ = ["measure_per_step"]


async def _measure(runs: int, repeats: int, steps: int, transport: str) -> dict[str, Any]:
    classes = load_capabilities(["bench.noop"])
    manifest = manifest_from_data(linear_manifest(steps))
    async with open_local_cluster(classes, ["bench.noop"], transport=transport) as cluster:
        workflow = cluster.compile(manifest)
        for _ in range(max(runs // 10, 20)):  # warm-up
            await cluster.run(workflow, {})
        samples: list[float] = []
        run_us: list[float] = []
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(runs):
                t0 = time.perf_counter()
                result = await cluster.run(workflow, {})
                run_us.append((time.perf_counter() - t0) * 1e6)
                if result.status != "completed":
                    raise RuntimeError(f"benchmark run ended {result.status}: {result.error}")
            samples.append((time.perf_counter() - start) * 1e6 / (runs * steps))
    run_us.sort()
    return {
        "transport": transport,
        "steps_per_run": steps,
        "runs": runs,
        "repeats": repeats,
        "per_step_us": statistics.median(samples),
        "per_step_us_min": min(samples),
        "per_step_us_max": max(samples),
        "run_p50_us": run_us[len(run_us) // 2],
        "run_p99_us": run_us[min(len(run_us) - 1, int(len(run_us) * 0.99))],
    }


def measure_per_step(runs: int = 2000, repeats: int = 3, *, steps: int = 3, transport: str = "ipc") -> dict[str, Any]:
    """Median microseconds per step over ``repeats`` batches of ``runs`` sequential runs."""
    return anyio.run(_measure, runs, repeats, steps, transport, backend="asyncio")
