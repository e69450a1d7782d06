"""What every peer module shares: its command line, the three timed loops, JSON-lines output.

A peer module provides the system's own way of doing one W1 run, one W2 batch and one W3
fan-out; these loops time them the same way for every peer (a warm-up, then ``repeats``
timed repetitions) and print figure records, one JSON line each, on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench._stats import percentile
from bench.record import figure, write_jsonl

__all__ = ["async_batch", "emit", "missing", "parse_args", "time_w1", "time_w2", "time_w3"]

STEPS = 3


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The peers' shared options (sizes; ``bench.peers.__main__`` passes them)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency-runs", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--in-flight", type=int, default=256)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--fanout", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    return parser.parse_args(argv)


def emit(*records: dict[str, Any]) -> None:
    """Print records as JSON lines on stdout (the runner collects them)."""
    write_jsonl(records, sys.stdout)


def missing(system: str, workload: str, label: str, reason: str) -> dict[str, Any]:
    """A record for a figure that could not be measured, with why."""
    return {"kind": "missing", "system": system, "workload": workload, "label": label, "reason": reason}


def _call(fn: Callable[..., Any], *args: Any) -> Any:
    """Call ``fn``; when it returns an awaitable, run that to completion on a fresh loop."""
    result = fn(*args)
    if inspect.isawaitable(result):
        return asyncio.run(_await(result))
    return result


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def time_w1(system: str, once: Callable[[], Any], *, runs: int, repeats: int, note: str, params: dict) -> list[dict]:
    """W1: ``runs`` runs one at a time, ``repeats`` times; ``once`` is sync or async."""

    async def loop_async(count: int, out: list[float]) -> float:
        start = time.perf_counter()
        for _ in range(count):
            t0 = time.perf_counter()
            await once()
            out.append((time.perf_counter() - t0) * 1e6)
        return time.perf_counter() - start

    def loop_sync(count: int, out: list[float]) -> float:
        start = time.perf_counter()
        for _ in range(count):
            t0 = time.perf_counter()
            once()
            out.append((time.perf_counter() - t0) * 1e6)
        return time.perf_counter() - start

    loop = loop_async if inspect.iscoroutinefunction(once) else loop_sync
    _call(loop, max(runs // 10, 5), [])
    run_us: list[float] = []
    per_step = [_call(loop, runs, run_us) * 1e6 / (runs * STEPS) for _ in range(repeats)]
    params = {**params, "steps": STEPS, "runs": runs, "repeats": repeats}
    label = f"{system}: 3-step linear run, one at a time"
    p50, p99 = percentile(run_us, 50), percentile(run_us, 99)
    return [
        figure(system, "W1", "per_step_us", f"{label}, per step", "us", per_step, params=params, note=note),
        figure(system, "W1", "run_p50_us", f"{label}, per run p50 (per step {p50 / STEPS:.0f} us)", "us", [p50],
               params=params, note=note, per_step_us=p50 / STEPS),
        figure(system, "W1", "run_p99_us", f"{label}, per run p99 (per step {p99 / STEPS:.0f} us)", "us", [p99],
               params=params, note=note, per_step_us=p99 / STEPS),
    ]


async def async_batch(once: Callable[[], Awaitable[Any]], runs: int, in_flight: int) -> float:
    """Seconds for ``runs`` runs of ``once`` with ``in_flight`` of them in flight (asyncio)."""
    remaining = runs

    async def client() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await once()

    start = time.perf_counter()
    async with asyncio.TaskGroup() as tg:
        for _ in range(min(in_flight, runs)):
            tg.create_task(client())
    return time.perf_counter() - start


def time_w2(system: str, batch: Callable[[int, int], Any], *, runs: int, in_flight: int, repeats: int,
            note: str, params: dict, where: str) -> dict:
    """W2: ``batch(runs, in_flight)`` returns seconds (sync or async); steps per second."""
    _call(batch, max(runs // 10, min(in_flight, runs)), in_flight)
    rates = [runs * STEPS / _call(batch, runs, in_flight) for _ in range(repeats)]
    return figure(system, "W2", "steps_per_s", f"{system}: {runs:,} runs x 3 steps, {in_flight} in flight, {where}",
                  "steps/s", rates, better="higher", params={**params, "runs": runs, "in_flight": in_flight, "repeats": repeats},
                  note=note)


def time_w3(system: str, fan: Callable[[int], Any], *, n: int, repeats: int, note: str, params: dict, where: str) -> dict:
    """W3: ``fan(n)`` runs one ``n``-way fan-out and a join (sync or async); wall milliseconds."""

    def timed() -> float:
        start = time.perf_counter()
        _call(fan, n)
        return (time.perf_counter() - start) * 1e3

    timed()  # warm-up
    walls = [timed() for _ in range(repeats)]
    return figure(system, "W3", "wall_ms", f"{system}: {n:,}-way fan-out and a join, {where}", "ms", walls,
                  params={**params, "fanout": n, "repeats": repeats}, note=note)
