"""``python -m bench`` (``make bench``): ontoflow and the floor, every workload, in one run.

Writes the Markdown table to stdout and ``bench/results/latest.md``, the raw records as JSON
lines to ``bench/results/latest.jsonl`` and the PNG plots beside them. When
``bench/results/peers.jsonl`` exists (``make bench-peers``), its figures join the table.

    python -m bench              # the full configuration (make bench)
    python -m bench --quick      # a tiny one, a minute or so
    python -m bench --render     # only rebuild latest.md and the plots from the JSON lines
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.config import FULL, QUICK, TINY
from bench.record import cpu_ticks, machine_facts, steal_percent, write_jsonl
from bench.report import attach_ratios, read_jsonl, render_markdown, write_plots

RESULTS = Path(__file__).resolve().parent / "results"
PACKAGES = ("ontoflow", "anyio", "msgspec", "pyzmq", "structlog", "matplotlib")


def _measure(config_name: str, out: Path) -> None:
    from bench.floor_suite import measure_floor_suite
    from bench.ontoflow_suite import measure_ontoflow
    from ontoflow.runtime.logging import configure_logging

    configure_logging(level="warning", stream=sys.stderr)
    config = {"full": FULL, "quick": QUICK, "tiny": TINY}[config_name]
    print(f"bench: {config.name} configuration; floor ...", file=sys.stderr, flush=True)
    machine = {**machine_facts(PACKAGES), "invocation": "ontoflow"}
    records = [machine, {"kind": "config", "name": config.name, "scaled": list(config.scaled)}]
    ticks = cpu_ticks()
    floor = measure_floor_suite(
        pingpong_n=config.floor_pingpong_n, pipelined_n=config.floor_pipelined_n, depth=config.in_flight,
        echoes=config.w2_workers, fanout=config.fanout, repeats=config.repeats, worker_series=config.worker_series,
    )
    print("bench: ontoflow ...", file=sys.stderr, flush=True)
    ours = measure_ontoflow(config)
    if any(_is_sync_w1_floor(r) for r in ours):
        # The sync ping-pong timed between ontoflow's W1 repetitions replaces the one timed
        # minutes earlier: W1's ratio is between figures of the same minutes.
        floor = [r for r in floor if not _is_sync_w1_floor(r)]
    records += floor + ours
    machine["steal_pct"] = steal_percent(ticks, cpu_ticks())
    attach_ratios(records)
    with (out / "latest.jsonl").open("w") as fh:
        write_jsonl(records, fh)


def _is_sync_w1_floor(record: dict) -> bool:
    return record.get("kind") == "figure" and (record["system"], record["workload"]) == ("floor-sync", "W1")


def _render(out: Path, peers: Path) -> str:
    ours = read_jsonl(out / "latest.jsonl")
    theirs = read_jsonl(peers)
    text = render_markdown([ours] + ([theirs] if theirs else []))
    (out / "latest.md").write_text(text)
    for message in write_plots(ours, out):  # the peers' floors are another invocation's
        print(message, file=sys.stderr)
    return text


def main(argv: list[str] | None = None) -> int:
    """Measure (unless ``--render``), then print and save the table and plots; returns 0."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--quick", action="store_true", help="a small configuration (about a minute)")
    group.add_argument("--tiny", action="store_true", help="a few runs of everything (the harness's tests)")
    group.add_argument("--render", action="store_true", help="do not measure; rebuild the table and plots")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results folder (default bench/results)")
    parser.add_argument("--peers", type=Path, default=None, help="peers' JSON lines (default OUT/peers.jsonl)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.render:
        _measure("tiny" if args.tiny else "quick" if args.quick else "full", args.out)
    sys.stdout.write(_render(args.out, args.peers or args.out / "peers.jsonl"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
