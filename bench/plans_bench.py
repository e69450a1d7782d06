"""Plan figures: a 1,000-way fan-out plus a join, and rows/s of SQLite -> CSV.

Two functions for the bench harness (run from the repository root: worker processes import
this module by name)::

    measure_fanout(n=1000) -> {"n", "wall_s", "steps_per_s", ...}
    measure_rows(rows=1_000_000) -> {"rows", "ontoflow_rows_per_s", "plain_rows_per_s", "ratio", "peak_rss_mb", ...}
"""

from __future__ import annotations

import csv
import resource
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar


from ontoflow.actors.capability import Capability
from ontoflow.protocols import ArrayParam, CapabilityMetadata, Decomposition, StepContext
from ontoflow.runtime.loop import run as run_async

__all__ = ["CAPABILITIES", "BenchFan", "BenchJoin", "measure_fanout", "measure_rows"]

_SPEC = "bench.plans_bench"


class BenchFan(Capability):
    """Returns its element at once; declares ``bench.items`` -> ``bench.item`` fan-out."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="bench.fan",
        input_schema={"type": "object", "properties": {"bench.item": {}}},
        outputs=["bench.value"],
        idempotent=True,
        timeout_ms=None,
        decomposition=Decomposition(array_params=[ArrayParam(param_name="bench.items", single_param_name="bench.item", max_concurrency=1024)]),
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        return {"bench.value": inputs.get("bench.item")}


class BenchJoin(Capability):
    """Counts the gathered values."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="bench.join",
        input_schema={"type": "object", "properties": {"bench.values": {"type": "array"}}, "required": ["bench.values"]},
        outputs=["bench.count"],
        idempotent=True,
        timeout_ms=None,
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        return {"bench.count": len(inputs["bench.values"])}


CAPABILITIES = [BenchFan, BenchJoin]


def measure_fanout(n: int = 1000, *, repeats: int = 3, max_concurrency: int = 256, slots: int = 256) -> dict[str, Any]:
    """Wall time of an ``n``-way fan-out plus a join, workers in another process over ipc.

    Returns the best of ``repeats`` runs (after one warm-up) in seconds, and steps per second.
    """
    from ontoflow.actors.orchestrator.plans import compile_plan
    from ontoflow.protocols import plan_from_data
    from ontoflow.runtime.embedded import open_local_cluster

    plan = plan_from_data({
        "name": "fanout",
        "max_concurrency": max_concurrency,
        "steps": [
            {"id": "fan", "capability": "bench.fan", "params": {"bench.items": list(range(n))}},
            {"id": "join", "capability": "bench.join", "depends_on": ["fan"], "params": {"bench.values": "${fan.bench.value}"}},
        ],
    })

    async def go() -> list[float]:
        times: list[float] = []
        async with open_local_cluster(CAPABILITIES, [_SPEC], transport="ipc", workers=1, slots=slots) as cluster:
            compiled = compile_plan(plan, cluster.catalog)
            for i in range(repeats + 1):
                started = time.perf_counter()
                result = await cluster.run(compiled, {})  # type: ignore[arg-type]
                took = time.perf_counter() - started
                if result.status != "completed" or result.context.get("bench.count") != n:
                    raise RuntimeError(f"fan-out run ended {result.status}: {result.error}")
                if i:
                    times.append(took)
        return times

    times = run_async(go)
    best = min(times)
    return {"n": n, "wall_s": best, "runs_s": times, "steps_per_s": (n + 1) / best, "transport": "ipc", "workers": 1}


def _make_table(path: Path, rows: int) -> None:
    db = sqlite3.connect(path)
    with db:
        db.execute("CREATE TABLE t (id INTEGER, name TEXT, score REAL, country TEXT)")
        db.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", ((i, f"name-{i}", i * 0.5, "SE") for i in range(rows)))
    db.close()


def _plain(db_path: Path, out: Path, batch: int = 5000) -> None:
    db = sqlite3.connect(db_path)
    try:
        cursor = db.execute("SELECT * FROM t")
        with out.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow([d[0] for d in cursor.description])
            while True:
                chunk = cursor.fetchmany(batch)
                if not chunk:
                    break
                writer.writerows(chunk)
    finally:
        db.close()


def measure_rows(rows: int = 1_000_000) -> dict[str, Any]:
    """Rows/s of ``sqlite.extractor`` -> ``csv.writer`` (worker process, ipc) against a plain
    ``sqlite3`` + ``csv`` loop, and the worker's peak RSS (flat memory: it does not grow with
    ``rows``)."""
    from ontoflow.actors.capabilities import CAPABILITIES as BUILTINS
    from ontoflow.actors.orchestrator.plans import compile_plan
    from ontoflow.protocols import plan_from_data
    from ontoflow.runtime.embedded import open_local_cluster

    with tempfile.TemporaryDirectory(prefix="ontoflow-rows-") as tmp:
        folder = Path(tmp)
        db_path = folder / "t.db"
        _make_table(db_path, rows)
        plan = plan_from_data({
            "steps": [
                {"id": "extract", "capability": "sqlite.extractor", "params": {"data.database": str(db_path), "data.query": "SELECT * FROM t"}},
                {"id": "write", "capability": "csv.writer", "depends_on": ["extract"],
                 "params": {"data.dataset": "${extract.data.dataset}", "data.path": str(folder / "ontoflow.csv")}},
            ],
        })

        async def go() -> float:
            async with open_local_cluster(BUILTINS, ["ontoflow.actors.capabilities"], transport="ipc", defaults={"data.work_dir": str(folder / "work")}) as cluster:
                compiled = compile_plan(plan, cluster.catalog, defaults=cluster.defaults)
                started = time.perf_counter()
                result = await cluster.run(compiled, {})  # type: ignore[arg-type]
                took = time.perf_counter() - started
                if result.status != "completed":
                    raise RuntimeError(f"rows run ended {result.status}: {result.error}")
                return took

        ontoflow_s = run_async(go)
        # ru_maxrss of waited-for children: the worker process (KiB on Linux).
        peak_rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        started = time.perf_counter()
        _plain(db_path, folder / "plain.csv")
        plain_s = time.perf_counter() - started
        same = (folder / "plain.csv").read_bytes() == (folder / "ontoflow.csv").read_bytes()
    return {
        "rows": rows,
        "ontoflow_s": ontoflow_s,
        "plain_s": plain_s,
        "ontoflow_rows_per_s": rows / ontoflow_s,
        "plain_rows_per_s": rows / plain_s,
        "ratio": plain_s / ontoflow_s,
        "peak_rss_mb": peak_rss_mb,
        "same_output": same,
    }
