"""Where W2's CPU goes: microseconds of CPU per step in each process and thread, per worker count.

A throughput figure says how fast; this says who paid. For each worker count it runs W2's
workload (``bench.throughput``) on a local cluster and reads the CPU times and context switches
of this process's threads (the orchestrator and the driver, libzmq's I/O thread) and of the
worker processes (their main threads, their other threads) before and after each batch::

    python -m bench.cpu_split [--workers 1 8] [--runs 10000] [--repeats 3] [--in-flight 256]

It is how W4's drop at 8 workers on 2 cores was traced to the workers' own steps costing more
CPU (cold caches after each switch), not to the orchestrator. Needs psutil (the bench extra).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import psutil

from ontoflow.actors.capability import load_capabilities
from bench.noop import linear_manifest
from bench.throughput import _batch
from ontoflow.protocols import manifest_from_data
from ontoflow.runtime.embedded import open_local_cluster
from ontoflow.runtime.loop import run as run_async

__all__ = ["measure_cpu_split", "main"]

STEPS = 3


def _snapshot() -> dict[str, Any]:
    me = psutil.Process()
    threads = sorted((t.user_time + t.system_time for t in me.threads()), reverse=True)
    workers = []
    for child in me.children(recursive=True):
        times = sorted(t.user_time + t.system_time for t in child.threads())
        switches = child.num_ctx_switches()
        workers.append((child.pid, times[-1], sum(times[:-1]), switches.voluntary, switches.involuntary))
    return {"threads": threads, "workers": {w[0]: w[1:] for w in workers}}


async def measure_cpu_split(workers: int, runs: int = 10_000, repeats: int = 3, in_flight: int = 256) -> list[dict[str, Any]]:
    """One record per timed batch: steps/s and CPU microseconds per step by who spent them.

    Keys: ``workers``, ``steps_per_s``, ``orchestrator_us`` (this process's busiest thread),
    ``io_us`` (its other threads), ``worker_main_us``, ``worker_other_us``,
    ``worker_switches_per_step`` (voluntary, involuntary).

    Raises:
        ValueError: when a count is below 1.
        RuntimeError: when a run does not complete.
    """
    for name, value in (("workers", workers), ("runs", runs), ("repeats", repeats), ("in_flight", in_flight)):
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    classes = load_capabilities(["bench.noop"])
    slots = max(8, -(-in_flight // workers))
    records = []
    async with open_local_cluster(classes, ["bench.noop"], transport="ipc", workers=workers, slots=slots) as cluster:
        workflow = cluster.compile(manifest_from_data(linear_manifest(STEPS)))
        await _batch(cluster, workflow, max(runs // 10, in_flight), in_flight)
        for _ in range(repeats):
            before = _snapshot()
            seconds = await _batch(cluster, workflow, runs, in_flight)
            after = _snapshot()
            steps = runs * STEPS
            per_step = 1e6 / steps
            threads = [a - b for a, b in zip(after["threads"], before["threads"], strict=False)]
            deltas = [[a - b for a, b in zip(after["workers"][pid], before["workers"].get(pid, (0,) * 4), strict=True)]
                      for pid in after["workers"]]
            records.append({
                "workers": workers, "steps_per_s": round(steps / seconds),
                "orchestrator_us": round(max(threads, default=0) * per_step, 1),
                "io_us": round((sum(threads) - max(threads, default=0)) * per_step, 1),
                "worker_main_us": round(sum(d[0] for d in deltas) * per_step, 1),
                "worker_other_us": round(sum(d[1] for d in deltas) * per_step, 1),
                "worker_switches_per_step": (round(sum(d[2] for d in deltas) / steps, 3),
                                             round(sum(d[3] for d in deltas) / steps, 3)),
            })
    return records


def main(argv: list[str] | None = None) -> int:
    """Print one line per timed batch; returns 0."""
    from ontoflow.runtime.logging import configure_logging

    parser = argparse.ArgumentParser(prog="python -m bench.cpu_split", description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 8], help="worker counts (default 1 8)")
    parser.add_argument("--runs", type=int, default=10_000, help="runs per timed batch (default 10000)")
    parser.add_argument("--repeats", type=int, default=3, help="timed batches per worker count (default 3)")
    parser.add_argument("--in-flight", type=int, default=256, help="runs in flight (default 256)")
    args = parser.parse_args(argv)
    configure_logging(level="warning", stream=sys.stderr)
    for workers in args.workers:
        for r in run_async(measure_cpu_split, workers, args.runs, args.repeats, args.in_flight):
            print(f"{r['workers']} worker(s): {r['steps_per_s']:,} steps/s; CPU us per step: orchestrator "
                  f"{r['orchestrator_us']}, its other threads {r['io_us']}, workers {r['worker_main_us']} "
                  f"(+{r['worker_other_us']} other threads); worker switches per step "
                  f"{r['worker_switches_per_step'][0]} voluntary, {r['worker_switches_per_step'][1]} involuntary",
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
