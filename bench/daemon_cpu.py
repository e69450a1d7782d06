"""Who pays for a run through the daemon: CPU microseconds per run in the daemon, the workers
and the client, for the workload of ``bench.multihost_bench``.

A throughput figure through the daemon moves by a third within minutes on a shared machine;
the CPU each process spends per run moves much less, and says which process to make cheaper.
One daemon, ``--workers`` worker processes and this process as the client keeping
``--in-flight`` runs outstanding with ``Submit(wait=True)``; a warm-up, then ``--repeats``
batches, each read from the processes' CPU counters (``/proc``, Linux) before and after::

    python -m bench.daemon_cpu [--workload inputs|plain] [--workers 4] [--runs 10000] [--repeats 3]

Prints one JSON line per batch: steps/s, and CPU us per run for the daemon, all workers and
the client.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
from typing import Any

from bench.multihost_bench import STEPS, WORKLOADS, _daemon, _drive, _stop, _wait_workers, _worker
from ontoflow.runtime.loop import run as run_async

__all__ = ["measure_daemon_cpu", "main"]


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (``/proc/PID/stat``)."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure_daemon_cpu(workload: str = "inputs", workers: int = 4, runs: int = 10_000, in_flight: int = 256,
                       slots: int = 64, repeats: int = 3) -> list[dict[str, Any]]:
    """CPU per run of each process through the daemon, one record per batch.

    Returns:
        Records with ``steps_per_s`` and ``daemon_us_per_run``, ``workers_us_per_run`` (all
        worker processes together) and ``client_us_per_run``.

    Raises:
        ValueError: for an unknown workload or a count below 1.
        RuntimeError: when the daemon does not start or a run does not complete.
    """
    if workload not in WORKLOADS:
        raise ValueError(f"workload must be one of {sorted(WORKLOADS)}, got {workload!r}")
    if min(workers, runs, in_flight, slots, repeats) < 1:
        raise ValueError("workers, runs, in_flight, slots and repeats must be >= 1")
    with_inputs = WORKLOADS[workload][1]
    records: list[dict[str, Any]] = []
    with _daemon(1000, 3) as (address, daemon):
        procs = [_worker(address, slots, i) for i in range(workers)]
        try:
            run_async(_wait_workers, address, workers)
            run_async(_drive, address, max(runs // 10, 100), in_flight, with_inputs)  # warm-up
            for _ in range(repeats):
                before = [_cpu_s(daemon.pid), sum(_cpu_s(p.pid) for p in procs), _own_cpu_s()]
                elapsed = run_async(_drive, address, runs, in_flight, with_inputs)
                after = [_cpu_s(daemon.pid), sum(_cpu_s(p.pid) for p in procs), _own_cpu_s()]
                daemon_s, workers_s, client_s = (a - b for a, b in zip(after, before, strict=True))
                records.append({
                    "name": "daemon_cpu", "workload": workload, "workers": workers, "runs": runs,
                    "in_flight": in_flight, "steps_per_s": round(runs * STEPS / elapsed, 1),
                    "daemon_us_per_run": round(daemon_s / runs * 1e6, 1),
                    "workers_us_per_run": round(workers_s / runs * 1e6, 1),
                    "client_us_per_run": round(client_s / runs * 1e6, 1),
                })
        finally:
            for p in procs:
                _stop(p)
    return records


def main(argv: list[str] | None = None) -> None:
    """Print one JSON line per batch."""
    parser = argparse.ArgumentParser(prog="python -m bench.daemon_cpu", description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="inputs")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    for record in measure_daemon_cpu(args.workload, args.workers, args.runs, repeats=args.repeats):
        print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
