"""``python -m bench`` (``make bench``): ontoflow against the floor, in one run, as ratios.

Writes a Markdown table to stdout and ``bench/results/latest.md``, raw JSON lines beside it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import sys
from importlib import metadata
from pathlib import Path

import msgspec

from bench.floor import measure_floor
from bench.per_step import measure_per_step
from runtime.logging import configure_logging

RESULTS = Path(__file__).resolve().parent / "results"


def _machine() -> dict[str, str]:
    versions = {}
    for pkg in ("anyio", "msgspec", "pyzmq", "structlog"):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = "?"
    return {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cores": str(os.cpu_count()),
        "python": platform.python_version(),
        "platform": platform.platform(),
        **versions,
    }


def main(argv: list[str] | None = None) -> int:
    """Measure, print and save; returns 0."""
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--runs", type=int, default=2000, help="sequential runs per repetition")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--floor-n", type=int, default=20000)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    configure_logging(level="warning")

    machine = _machine()
    floor = measure_floor(n=args.floor_n, repeats=args.repeats)
    ours = measure_per_step(runs=args.runs, repeats=args.repeats)
    ratio = ours["per_step_us"] / floor["sync_rtt_us"]
    rows = [
        ("floor: sync pyzmq + msgspec ping-pong, 2 processes, ipc", f"{floor['sync_rtt_us']:.1f} us", "1.00"),
        ("floor: asyncio pyzmq + msgspec ping-pong", f"{floor['async_rtt_us']:.1f} us", f"{floor['async_rtt_us'] / floor['sync_rtt_us']:.2f}"),
        (
            "ontoflow: per step, 3-step linear workflow, worker process over ipc",
            f"{ours['per_step_us']:.1f} us (min {ours['per_step_us_min']:.1f}, max {ours['per_step_us_max']:.1f})",
            f"{ratio:.2f}",
        ),
        ("ontoflow: per run (3 steps) p50 / p99", f"{ours['run_p50_us']:.0f} / {ours['run_p99_us']:.0f} us", ""),
    ]
    lines = [
        f"# ontoflow benchmark — {machine['date']}",
        "",
        f"Machine: {machine['cores']} cores, Python {machine['python']}, {machine['platform']}; "
        f"anyio {machine['anyio']}, msgspec {machine['msgspec']}, pyzmq {machine['pyzmq']}, structlog {machine['structlog']}.",
        f"Median of {args.repeats} repetitions after a warm-up; ratio = figure / sync floor, measured in this same run.",
        "Goal (issue 2): ontoflow per step <= 2.00 x the sync floor.",
        "",
        "| measurement | median | ratio to sync floor |",
        "|---|---|---|",
        *[f"| {a} | {b} | {c} |" for a, b, c in rows],
        "",
    ]
    text = "\n".join(lines)
    sys.stdout.write(text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "latest.md").write_text(text)
    with (out / "latest.jsonl").open("w") as fh:
        for record in ({"kind": "machine", **machine}, {"kind": "floor", **floor}, {"kind": "per_step", **ours, "ratio_to_sync_floor": ratio}):
            fh.write(msgspec.json.encode(record).decode() + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
