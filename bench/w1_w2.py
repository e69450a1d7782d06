"""Only W1 and W2, as ``make bench`` (the full configuration) measures them, in about a minute.

One local cluster of ``w2_workers`` worker processes over ``ipc://`` (``slots_for`` slots each,
as ``bench.ontoflow_suite``): W1 is 3-step linear runs one at a time with the sync floor timed
in turn (``bench.per_step.measure_latency``), W2 the throughput batches
(``bench.throughput``). Prints each figure's samples and median, and W1's ratio to the floor::

    python -m bench.w1_w2 [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from typing import Any

from bench.config import FULL
from bench.floor import open_sync_pingpong
from bench.noop import linear_manifest
from bench.ontoflow_suite import slots_for
from bench.per_step import measure_latency
from bench.throughput import measure_throughput_interleaved
from ontoflow.actors.capability import load_capabilities
from ontoflow.protocols import manifest_from_data
from ontoflow.runtime.embedded import open_local_cluster
from ontoflow.runtime.loop import run as run_async

__all__ = ["main"]


async def _measure(repeats: int) -> list[dict[str, Any]]:
    config, workers = FULL, FULL.w2_workers
    runs = dict(config.latency_runs)[3]
    async with open_local_cluster(load_capabilities(["bench.noop"]), ["bench.noop"], transport="ipc",
                                  workers=workers, slots=slots_for(config, workers)) as cluster:
        workflow = cluster.compile(manifest_from_data(linear_manifest(3)))
        with open_sync_pingpong() as floor:
            records = await measure_latency(cluster, [(3, workflow, runs)], repeats=repeats, workers=workers,
                                            floor=floor, floor_n=config.floor_pingpong_n // 2)
        records += await measure_throughput_interleaved(
            [(cluster, workflow, workers, slots_for(config, workers), "W2")], steps=3, runs=config.throughput_runs,
            in_flight=config.in_flight, repeats=repeats)
    return records


def main(argv: list[str] | None = None) -> int:
    """Measure W1 and W2 and print them; returns 0."""
    from ontoflow.runtime.logging import configure_logging

    parser = argparse.ArgumentParser(prog="python -m bench.w1_w2", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="repetitions of each figure (default 3)")
    args = parser.parse_args(argv)
    configure_logging(level="warning", stream=sys.stderr)
    medians = {}
    for r in run_async(_measure, args.repeats):
        if r.get("metric") in ("per_step_us", "steps_per_s"):
            medians[r["system"], r["workload"]] = median = statistics.median(r["samples"])
            print(f"{r['system']} {r['workload']} {r['metric']}: {[round(s) for s in r['samples']]} median {median:,.0f}")
    print(f"W1 ratio to the sync floor: {medians['ontoflow', 'W1'] / medians['floor-sync', 'W1']:.2f}x")
    return 0


if __name__ == "__main__":  # the floor's echo process is spawned: the import must not measure
    raise SystemExit(main())
