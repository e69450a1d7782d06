"""Steps/s through a daemon with N worker processes, and the detection time of a killed worker.

Everything is a real process on this machine over loopback TCP: ``ontoflow daemon``, N
``ontoflow worker`` processes hosting ``bench.noop`` and ``bench.typed``, and this process as
the client, which keeps ``in_flight`` runs of a 3-step linear no-op workflow outstanding
(``Submit(wait=True)``: accepted, then the run's status at its end; a new run as each ends).
Two workloads take their batches in turn: ``plain`` runs carry no inputs; ``inputs`` runs carry
two (a string and an integer) that the daemon checks against ``bench.typed``'s declared
schemas at each submit. Each worker count gets a
warm-up and ``repeats`` timed batches (median and range reported): the machine is shared and
a single short batch drifts by a third from one minute to the next. The workers share this machine's cores with
the daemon, so they run at ``--nice 10`` as the embedded cluster's do (on their own hosts they
would not need it). ``python -m bench.multihost_bench [--runs N] [--repeats R] [--workload both|plain|inputs] [--quick]`` prints the records as JSON lines, with
the pipelined floor (plain pyzmq + msgspec, sync and asyncio, as many echo processes as
workers) timed in turn with the daemon's batches (one floor run per round, before them) and
each throughput's ratio to it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio

from bench.floor_suite import open_pipelined_floor
from bench.noop import linear_manifest
from bench.typed import INPUTS, typed_manifest
from bench.record import cpu_ticks, machine_facts, steal_percent
from ontoflow.protocols.client import Error, RunStatus, Submit, SubmitAccepted, Workers, WorkersInfo
from ontoflow.runtime.cli import open_client, request
from ontoflow.runtime.loop import run as run_async

__all__ = ["WORKLOADS", "measure_detection", "measure_throughput", "round_order"]

REPO = Path(__file__).resolve().parents[1]
STEPS = 3


@contextmanager
def _daemon(heartbeat_ms: int, liveness: int) -> Iterator[tuple[str, subprocess.Popen]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "ontoflow", "daemon", "--bind", "tcp://127.0.0.1:0", "--heartbeat-ms", str(heartbeat_ms),
         "--liveness", str(liveness), "--log-level", "error"],
        cwd=REPO, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if not line.startswith("listening on "):
            raise RuntimeError("the daemon did not start")
        yield line.removeprefix("listening on "), proc
    finally:
        _stop(proc)


def _worker(address: str, slots: int, i: int, nice: int = 10) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "ontoflow", "worker", "--connect", address, "--no-builtins", "-c", "bench.noop", "-c", "bench.typed",
         "--slots", str(slots), "--worker-id", f"bench-{i}", "--log-level", "error", "--nice", str(nice)],
        cwd=REPO, stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


async def _wait_workers(address: str, count: int, timeout_s: float = 30) -> None:
    async with open_client(address) as client:
        with anyio.fail_after(timeout_s):
            while True:
                info = await request(client, Workers())
                if isinstance(info, WorkersInfo) and len(info.workers) >= count:
                    return
                await anyio.sleep(0.02)


async def _drive(address: str, runs: int, in_flight: int, with_inputs: bool = False) -> float:
    """Run ``runs`` runs with ``in_flight`` outstanding (of ``bench.typed`` carrying its two
    inputs when ``with_inputs``); returns the elapsed seconds."""
    manifest = typed_manifest(STEPS) if with_inputs else linear_manifest(STEPS)
    submit = Submit(manifest=manifest, inputs=dict(INPUTS) if with_inputs else {}, wait=True)
    async with open_client(address) as client:
        start = time.perf_counter()
        # The submits of one turn leave together (``send_many``: one ZeroMQ message), as a
        # client pipelining requests sends them.
        submitted = min(in_flight, runs)
        client.send_many([submit] * submitted)
        done = 0
        while done < runs:
            again = 0
            for reply in await client.recv_batch():
                if isinstance(reply, SubmitAccepted):
                    continue
                if isinstance(reply, RunStatus):
                    if reply.status != "completed":
                        raise RuntimeError(f"a benchmark run ended {reply.status}")
                    done += 1
                    if submitted < runs:
                        again += 1
                        submitted += 1
                elif isinstance(reply, Error):
                    raise RuntimeError(f"the daemon refused a run: {reply.code}")
            if again:
                client.send_many([submit] * again)
        return time.perf_counter() - start


#: The workloads through the daemon: the record name each is reported under, and whether its
#: runs (of ``bench.typed`` then, else of ``bench.noop``) carry ``bench.typed``'s two inputs.
WORKLOADS: dict[str, tuple[str, bool]] = {
    "plain": ("multihost_throughput", False),
    "inputs": ("multihost_inputs_throughput", True),
}


def round_order(workloads: Sequence[str], round_index: int) -> list[str]:
    """The workloads' order in round ``round_index``: as given in even rounds, reversed in odd
    ones. A batch that always came second would always meet what the first left behind (the
    daemon's table of ended runs filled by it, a warmer or colder cache, the machine's drift
    within a round); counterbalancing the order keeps that out of the difference between them."""
    return list(workloads) if round_index % 2 == 0 else list(reversed(workloads))


def measure_throughput(workers: Sequence[int] = (1, 2, 4), runs: int = 20_000, in_flight: int = 256, *, slots: int = 64,
                       repeats: int = 3, workloads: Sequence[str] = ("plain",), floor_count: int = 0) -> list[dict[str, Any]]:
    """Steps/s through the daemon for each worker count and workload: one daemon per count
    whose workers host ``bench.noop`` and ``bench.typed``, a warm-up of a tenth of ``runs``
    per workload, then ``repeats`` rounds of one timed batch of ``runs`` runs per workload, in
    turn (so the workloads' figures come from the same minutes; median and range), their order
    reversed every other round (``round_order``).

    ``plain`` runs carry no inputs (``bench.noop``); ``inputs`` runs (``bench.typed``) carry
    two, which the daemon checks against the declared schemas at each submit and the worker
    host against the whole ``input_schema`` at each step.

    With ``floor_count``, each round also times the pipelined floor (plain pyzmq + msgspec,
    ``in_flight`` deep, sync then asyncio, ``floor_count`` round trips) against as many echo
    processes as workers, before the workloads' batches: on a shared machine whose speed
    drifts by a third within minutes, a ratio is only meaningful between figures of the same
    minutes.

    Returns:
        One record per count and workload, in that order: ``name`` (``multihost_throughput``
        or ``multihost_inputs_throughput``), ``workers``, ``runs``, ``steps``, ``repeats``,
        ``inputs`` (how many each run carries), ``steps_per_s`` (the median),
        ``min_steps_per_s``, ``max_steps_per_s`` and ``samples``; with ``floor_count``, also
        ``floor_sync_steps_per_s`` and ``floor_async_steps_per_s`` (the medians of the floor
        timed in turn), their ``floor_*_samples``, and ``vs_sync_floor`` / ``vs_asyncio_floor``
        (the median over the floor's median).

    Raises:
        ValueError: when a count is below 1 or a workload is unknown.
        RuntimeError: when the daemon or an echo process does not start, or a run does not
            complete.
    """
    for name, value in (("runs", runs), ("in_flight", in_flight), ("slots", slots), ("repeats", repeats),
                        *(("workers", n) for n in workers)):
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    unknown = [w for w in workloads if w not in WORKLOADS]
    if unknown or not workloads:
        raise ValueError(f"workloads must be among {sorted(WORKLOADS)}, got {list(workloads)}")
    records: list[dict[str, Any]] = []
    for n in workers:
        samples: dict[str, list[float]] = {w: [] for w in workloads}
        floors: dict[str, list[float]] = {"sync": [], "async": []}
        with contextlib.ExitStack() as stack:
            floor_runs = {}
            if floor_count:
                warmup = max(10, min(floor_count // 10, 2000))
                floor_runs = {mode: stack.enter_context(open_pipelined_floor(mode, n, in_flight, warmup)) for mode in floors}
            address, _ = stack.enter_context(_daemon(1000, 3))
            procs = [_worker(address, slots, i) for i in range(n)]
            try:
                run_async(_wait_workers, address, n)
                for w in workloads:  # warm-up
                    run_async(_drive, address, max(runs // 10, min(runs, 100)), in_flight, WORKLOADS[w][1])
                for i in range(repeats):
                    for mode, run in floor_runs.items():
                        floors[mode].append(floor_count / run(floor_count))
                    for w in round_order(workloads, i):
                        samples[w].append(runs * STEPS / run_async(_drive, address, runs, in_flight, WORKLOADS[w][1]))
            finally:
                for p in procs:
                    _stop(p)
        for w in workloads:
            name, with_inputs = WORKLOADS[w]
            record = {
                "name": name, "workers": n, "runs": runs, "in_flight": in_flight, "slots": slots,
                "steps": runs * STEPS, "repeats": repeats, "inputs": len(INPUTS) if with_inputs else 0,
                "steps_per_s": round(statistics.median(samples[w]), 1), "min_steps_per_s": round(min(samples[w]), 1),
                "max_steps_per_s": round(max(samples[w]), 1), "samples": [round(x, 1) for x in samples[w]],
                "transport": "tcp loopback, daemon + workers + client in separate processes",
            }
            if floor_count:
                for mode, key in (("sync", "vs_sync_floor"), ("async", "vs_asyncio_floor")):
                    median = statistics.median(floors[mode])
                    record[f"floor_{mode}_steps_per_s"] = round(median, 1)
                    record[f"floor_{mode}_samples"] = [round(x, 1) for x in floors[mode]]
                    record[key] = round(record["steps_per_s"] / median, 3)
            records.append(record)
    return records


async def _time_loss(address: str, victim: subprocess.Popen, poll_s: float) -> float:
    async with open_client(address) as client:
        victim.send_signal(signal.SIGKILL)
        killed = time.perf_counter()
        victim.wait()
        with anyio.fail_after(60):
            while True:
                info = await request(client, Workers())
                if isinstance(info, WorkersInfo) and not info.workers:
                    return time.perf_counter() - killed
                await anyio.sleep(poll_s)


def measure_detection(heartbeat_ms: int = 100, liveness: int = 3, repeats: int = 5, *, poll_ms: float = 2.0) -> list[dict[str, Any]]:
    """Time from kill -9 of a worker to its removal from the daemon's registry.

    The bound to compare with is ``heartbeat_ms * liveness + heartbeat_ms``; the figure
    includes up to ``poll_ms`` of polling resolution.

    Returns:
        One record per repetition: ``detection_ms`` and ``bound_ms``.
    """
    records: list[dict[str, Any]] = []
    with _daemon(heartbeat_ms, liveness) as (address, _):
        for i in range(repeats):
            proc = _worker(address, 1, i)
            try:
                run_async(_wait_workers, address, 1)
                seconds = run_async(_time_loss, address, proc, poll_ms / 1000)
            finally:
                _stop(proc)
            records.append({
                "name": "multihost_detection", "heartbeat_ms": heartbeat_ms, "liveness": liveness,
                "detection_ms": round(seconds * 1000, 1), "bound_ms": heartbeat_ms * (liveness + 1),
            })
    return records


def main(argv: list[str] | None = None) -> None:
    """Print throughput with the floor timed in turn with it (and the ratios), then detection times."""
    parser = argparse.ArgumentParser(prog="python -m bench.multihost_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20_000, help="runs per timed batch (default 20000)")
    parser.add_argument("--repeats", type=int, default=3, help="timed batches per worker count (default 3)")
    parser.add_argument("--quick", action="store_true", help="a few runs of everything (figures meaningless)")
    parser.add_argument("--workload", choices=("both", *WORKLOADS), default="both",
                        help="plain runs, runs carrying two checked inputs, or both in turn (default)")
    args = parser.parse_args(argv)
    runs, repeats, floor_count, kills = args.runs, args.repeats, 20_000, 5
    if args.quick:
        runs, repeats, floor_count, kills = 40, 1, 200, 1
    ticks = cpu_ticks()
    machine = machine_facts(("ontoflow", "pyzmq", "msgspec", "anyio"))
    workloads = tuple(WORKLOADS) if args.workload == "both" else (args.workload,)
    throughput = measure_throughput(runs=runs, repeats=repeats, workloads=workloads, floor_count=floor_count)
    floors = [{"name": "multihost_floor", "mode": mode, "workers": r["workers"], "depth": r["in_flight"],
               "steps_per_s": r[f"floor_{mode}_steps_per_s"], "samples": r[f"floor_{mode}_samples"]}
              for r in throughput if r["name"] == WORKLOADS[workloads[0]][0] for mode in ("sync", "async")]
    detection = measure_detection(repeats=kills)
    machine = {"name": "multihost_machine", "date": machine["date"], "cores": machine["cores"],
               "python": machine["python"], "packages": machine["packages"], "steal_pct": steal_percent(ticks, cpu_ticks())}
    for record in [machine] + throughput + floors + detection:
        print(json.dumps(record), flush=True)

if __name__ == "__main__":
    main()
