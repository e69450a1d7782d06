"""The sizes of every measurement: the full configuration (``make bench``) and the quick one.

Counts are scaled to finish ``make bench`` in under about ten minutes on 2 cores; where a
count is below what issue 6 names, ``scaled`` says so and the table repeats it.
"""

from __future__ import annotations

import msgspec

__all__ = ["FULL", "QUICK", "TINY", "BenchConfig"]


class BenchConfig(msgspec.Struct, frozen=True, kw_only=True):
    """How many of everything one invocation measures."""

    name: str
    repeats: int = 3
    floor_pingpong_n: int = 20_000
    floor_pipelined_n: int = 20_000
    in_flight: int = 256
    fanout: int = 1_000
    #: W1 and W4's run-length series: (steps per run, sequential runs per repetition).
    latency_runs: tuple[tuple[int, int], ...] = ((3, 2_000), (30, 200), (300, 20))
    throughput_runs: int = 10_000
    w2_workers: int = 4
    worker_series: tuple[int, ...] = (1, 2, 4, 8)
    memory_counts: tuple[int, ...] = (1_000, 10_000, 100_000)
    #: Repetitions of the memory passes of ``n`` runs at most this large (larger ones run once).
    memory_repeat_up_to: int = 10_000
    rows: int = 100_000
    scaled: tuple[str, ...] = ()


FULL = BenchConfig(
    name="full",
    repeats=5,  # the machine is shared: five repetitions keep a burst from moving a median
    scaled=("memory: 100,000 runs in flight measured once per figure (1,000 and 10,000: 3 times)",
            "W3 rows: 100,000 rows instead of 1,000,000"),
)

QUICK = BenchConfig(
    name="quick",
    floor_pingpong_n=2_000,
    floor_pipelined_n=2_000,
    in_flight=64,
    fanout=200,
    latency_runs=((3, 100), (30, 10), (300, 2)),
    throughput_runs=500,
    w2_workers=2,
    worker_series=(1, 2),
    memory_counts=(1_000, 10_000),
    rows=2_000,
    scaled=("quick configuration: every count scaled down, figures are indicative only",),
)

#: For the harness's own tests: a few runs of everything, timings meaningless.
TINY = BenchConfig(
    name="tiny",
    repeats=1,
    floor_pingpong_n=50,
    floor_pipelined_n=50,
    in_flight=4,
    fanout=10,
    latency_runs=((3, 3), (30, 1)),
    throughput_runs=8,
    w2_workers=1,
    worker_series=(1, 2),
    memory_counts=(10, 20),
    rows=100,
    scaled=("tiny configuration (tests): figures are meaningless",),
)
