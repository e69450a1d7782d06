"""ontoflow's side of one invocation: W1, W2, W3 (through ``bench.plans_bench``), W4, W5, and
W2 through the daemon (``bench.multihost_bench``), with and without inputs.

Local clusters come from ``runtime.embedded.open_local_cluster`` with the ``bench.noop``
capability in worker processes over ``ipc://``: one per worker count, all open at once, so
that W4's worker series takes its batches in turn (a shared machine's speed drifts by a third
within minutes); the ``w2_workers`` cluster also serves W1, timed in turn with the sync floor. Each worker gets
enough slots for the window of runs in flight to fit in the workers (``slots_for``): a slot is
a step a worker may hold at once, and a no-op step needs no more than a place in the window
(Ray's async actors allow 1,000 concurrent calls by default; Celery's prefork pool holds
prefetched tasks the same way).
"""

from __future__ import annotations

import contextlib
import importlib
from typing import Any

import structlog

from ontoflow.actors.capability import load_capabilities
from bench.config import BenchConfig
from bench.memory import measure_memory
from bench.noop import linear_manifest
from bench.floor import open_sync_pingpong
from bench.per_step import measure_latency
from bench.record import figure
from bench.throughput import measure_throughput_interleaved
from ontoflow.protocols import manifest_from_data
from ontoflow.runtime.embedded import open_local_cluster
from ontoflow.runtime.loop import run as run_async

__all__ = ["measure_ontoflow", "measure_plans"]

log = structlog.get_logger()


def slots_for(config: BenchConfig, workers: int) -> int:
    """Slots per worker: the runs in flight spread over the workers, at least the default 8."""
    return max(8, -(-config.in_flight // workers))


async def _cluster_figures(config: BenchConfig) -> list[dict[str, Any]]:
    """W1, W2 and W4's worker and run-length series, on local clusters open side by side.

    One cluster per worker count is started first; W1 and the run-length series run on the
    W2 cluster, their repetitions in turn with each other and with the sync floor; then the
    throughput batches of every worker count are taken in turn
    (``measure_throughput_interleaved``). Idle clusters only exchange a heartbeat a second.
    """
    classes = load_capabilities(["bench.noop"])
    counts = sorted(set(config.worker_series) | {config.w2_workers})
    records: list[dict[str, Any]] = []
    async with contextlib.AsyncExitStack() as stack:
        clusters = {}
        for workers in counts:
            clusters[workers] = await stack.enter_async_context(open_local_cluster(
                classes, ["bench.noop"], transport="ipc", workers=workers, slots=slots_for(config, workers)))
        cluster = clusters[config.w2_workers]
        linear3 = {n: c.compile(manifest_from_data(linear_manifest(3))) for n, c in clusters.items()}
        series = [
            (steps, linear3[config.w2_workers] if steps == 3 else cluster.compile(manifest_from_data(linear_manifest(steps))),
             runs)
            for steps, runs in config.latency_runs
        ]
        with open_sync_pingpong() as floor:
            records += await measure_latency(cluster, series, repeats=config.repeats, workers=config.w2_workers,
                                             floor=floor, floor_n=config.floor_pingpong_n // 2)
        setups = [(clusters[n], linear3[n], n, slots_for(config, n), "W2" if n == config.w2_workers else "W4")
                  for n in counts]
        records += await measure_throughput_interleaved(
            setups, steps=3, runs=config.throughput_runs, in_flight=config.in_flight, repeats=config.repeats)
    return records


def measure_plans(config: BenchConfig) -> list[dict[str, Any]]:
    """W3 through ``bench.plans_bench`` when it exists; a ``missing`` record otherwise."""
    try:
        plans = importlib.import_module("bench.plans_bench")
    except ImportError as exc:
        return [{"kind": "missing", "system": "ontoflow", "workload": "W3",
                 "label": f"ontoflow: {config.fanout:,}-way fan-out and a join", "reason": f"not available (bench.plans_bench: {exc})"}]
    records = []
    for metric_prefix, call, label in (
        ("fanout", lambda: plans.measure_fanout(n=config.fanout), f"ontoflow: {config.fanout}-way fan-out and a join"),
        ("rows", lambda: plans.measure_rows(config.rows), f"ontoflow: {config.rows:,} rows sqlite -> csv"),
    ):
        try:
            result = call()
        except Exception as exc:  # another engineer's module: report, do not lose the rest
            records.append({"kind": "missing", "system": "ontoflow", "workload": "W3", "label": label,
                            "reason": f"failed: {type(exc).__name__}: {exc}"})
            continue
        records += _plans_figures(metric_prefix, label, result)
    return records


def _plans_figures(prefix: str, label: str, result: dict[str, Any]) -> list[dict[str, Any]]:
    """Figure records from ``bench.plans_bench``'s dicts (its keys, read as it documents them)."""
    note = "measured by bench.plans_bench"
    if prefix == "fanout" and "wall_s" in result:
        samples = [t * 1e3 for t in result.get("runs_s") or [result["wall_s"]]]
        workers = result.get("workers", "?")
        return [figure("ontoflow", "W3", "wall_ms", f"{label}, {workers} worker process(es), plan on the orchestrator",
                       "ms", samples, params={"source": "bench.plans_bench", "fanout": result.get("n"), "workers": workers},
                       note=note + "; its own median differs: plans_bench reports the best run")]
    if prefix == "rows" and "ontoflow_rows_per_s" in result:
        plain = result.get("plain_rows_per_s", 0.0)
        rss = result.get("peak_rss_mb")
        extra = f"; plain sqlite3 + csv loop {plain:,.0f} rows/s" + (f"; worker peak RSS {rss:.0f} MB" if rss else "")
        return [figure("ontoflow", "W3", "rows_per_s", f"{label}{extra}", "rows/s", [result["ontoflow_rows_per_s"]],
                       better="higher", params={"source": "bench.plans_bench", "rows": result.get("rows")}, note=note,
                       ratio_to_plain=result.get("ratio"))]
    records = []  # an unknown shape: every number as it is
    for key, value in result.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        records.append(figure("ontoflow", "W3", f"{prefix}.{key}", f"{label}: {key}", "", [value],
                              params={"source": "bench.plans_bench"}, note=note))
    return records


def _guarded(what: str, workload: str, measure) -> list[dict[str, Any]]:
    """``measure()``'s records, or one ``missing`` record naming the error (the rest still runs)."""
    try:
        return measure()
    except Exception as exc:  # report it in the table; a partial benchmark beats none
        log.warning("bench_part_failed", part=what, error=type(exc).__name__)
        return [{"kind": "missing", "system": "ontoflow", "workload": workload, "label": f"ontoflow: {what}",
                 "reason": f"failed: {type(exc).__name__}: {str(exc)[:200]}"}]


def measure_ontoflow(config: BenchConfig) -> list[dict[str, Any]]:
    """Every ontoflow figure of ``config``; returns figure (and ``missing``) records.

    A part that fails (a run that does not complete, workers that do not start) becomes a
    ``missing`` record with the error's type and message; the other parts still run.
    """
    records = _guarded(f"W1, W2 and W4 with {', '.join(map(str, sorted(set(config.worker_series) | {config.w2_workers})))} workers",
                       "W1", lambda: run_async(_cluster_figures, config))
    records += measure_plans(config)
    counts = list(config.memory_counts)
    small = [n for n in counts if n <= config.memory_repeat_up_to]
    large = [n for n in counts if n > config.memory_repeat_up_to]
    if small:
        records += _guarded("memory", "W4", lambda: run_async(lambda: measure_memory(small, repeats=config.repeats)))
    if large:
        records += _guarded("memory", "W4", lambda: run_async(lambda: measure_memory(large, repeats=1)))
    records += _guarded("W5, the journal on and off", "W5", lambda: _journal_figures(config))
    records += _guarded(f"through the daemon, {config.w2_workers} worker process(es)", "W2", lambda: _daemon_figures(config))
    return records


def _daemon_figures(config: BenchConfig) -> list[dict[str, Any]]:
    """W2 through the daemon (``bench.multihost_bench``): ``ontoflow daemon``, ``w2_workers``
    worker processes and a client over loopback TCP keeping ``in_flight`` runs outstanding with
    ``Submit(wait=True)``; plain runs and runs carrying two inputs checked against the declared
    schemas, their batches taken in turn with the pipelined floor against as many echo
    processes, whose medians (``floors_in_turn``) the ratios are read against."""
    from bench.multihost_bench import measure_throughput

    n = config.w2_workers
    slots = slots_for(config, n)
    records = []
    for r in measure_throughput(workers=(n,), runs=config.throughput_runs, in_flight=config.in_flight, slots=slots,
                                repeats=config.repeats, workloads=("plain", "inputs"), floor_count=config.floor_pipelined_n):
        carrying = f", each carrying {r['inputs']} inputs checked at submit" if r["inputs"] else ""
        label = (f"ontoflow through the daemon: {r['runs']:,} runs x 3 steps, {r['in_flight']} in flight{carrying}, "
                 f"{n} worker process(es) x {slots} slots, client over loopback TCP")
        floors = {"sync": r["floor_sync_steps_per_s"], "asyncio": r["floor_async_steps_per_s"]}
        records.append(figure(
            "ontoflow", "W2", "steps_per_s", label, "steps/s", r["samples"], better="higher",
            params={"via": "daemon", "workers": n, "slots": slots, "runs": r["runs"], "in_flight": r["in_flight"],
                    "inputs": r["inputs"]},
            note=("ontoflow daemon, worker and client processes over tcp://127.0.0.1 (bench.multihost_bench); ratios "
                  f"against the pipelined floor with {n} echo process(es) timed in turn with it: "
                  f"sync {floors['sync']:,.0f}, asyncio {floors['asyncio']:,.0f} steps/s"),
            floors_in_turn=floors,
        ))
    return records


def _journal_figures(config: BenchConfig) -> list[dict[str, Any]]:
    """W5: the same workload with the durable journal off and on, ``config.repeats`` times."""
    from bench.durability_bench import measure_journal_overhead

    runs = max(config.throughput_runs // 2, 4)  # a second or more per figure: shorter ones are mostly noise here
    samples = [measure_journal_overhead(runs=runs, steps=3, concurrency=config.in_flight) for _ in range(config.repeats)]
    params = {"runs": runs, "steps": 3, "in_flight": config.in_flight, "worker": "in-process (inproc)"}
    what = f"{runs:,} runs x 3 steps, {config.in_flight} in flight, in-process worker"
    return [
        figure("ontoflow", "W5", "steps_per_s_journal_off", f"ontoflow: {what}, journal off", "steps/s",
               [s["steps_per_s_off"] for s in samples], better="higher", params=params),
        figure("ontoflow", "W5", "steps_per_s_journal_on", f"ontoflow: {what}, journal on (SQLite WAL, group commit)",
               "steps/s", [s["steps_per_s_on"] for s in samples], better="higher", params=params),
        figure("ontoflow", "W5", "journal_cost_pct", "ontoflow: throughput lost to the journal (goal <= 30%)", "%",
               [s["overhead_pct"] for s in samples], params=params),
        # The same pairs read in steps per CPU second of the process: the workload is CPU-bound,
        # so uncontended the two agree, and on a loaded machine this one moves far less.
        figure("ontoflow", "W5", "journal_cpu_cost_pct", "ontoflow: CPU time per step added by the journal", "%",
               [s["cpu_overhead_pct"] for s in samples], params=params),
    ]
