"""``python -m bench.peers`` (``make bench-peers``): the floor, then every peer, into peers.jsonl.

Runs in ``bench/.venv-peers``. Measures the floor again in this invocation (the peers'
ratios are to this floor, measured minutes apart from theirs at most), then each peer module
in its own process, one after another, collecting the JSON lines each prints. A peer that
cannot be imported or fails is reported as ``missing`` with the reason; the others still run.
Writes ``bench/results/peers.jsonl``; ``python -m bench --render`` then merges it into
``latest.md``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from bench.floor_suite import measure_floor_suite
from bench.record import machine_facts, write_jsonl
from bench.report import attach_ratios

RESULTS = Path(__file__).resolve().parents[1] / "results"
PEERS = ("langgraph_peer", "burr_peer", "ray_peer", "celery_peer")
PACKAGES = ("langgraph", "apache-burr", "ray", "celery", "redis", "msgspec", "pyzmq")
#: Per-peer sizes (W1 sequential runs, W2 runs) where the full ones would take minutes.
_SIZES = {
    "full": {"default": (1000, 10_000), "celery_peer": (300, 2_000), "ray_peer": (300, 10_000)},
    "quick": {"default": (100, 500), "celery_peer": (30, 200), "ray_peer": (30, 300)},
}
_TIMEOUT_S = 900


def _run_peer(module: str, sizes: tuple[int, int], args: argparse.Namespace) -> list[dict]:
    system = module.removesuffix("_peer")
    argv = [sys.executable, "-m", f"bench.peers.{module}", "--latency-runs", str(sizes[0]), "--runs", str(sizes[1]),
            "--in-flight", str(args.in_flight), "--workers", str(args.workers), "--fanout", str(args.fanout),
            "--repeats", str(args.repeats)]
    print(f"bench-peers: {system} ...", file=sys.stderr, flush=True)
    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE, text=True, timeout=_TIMEOUT_S, cwd=RESULTS.parents[1])
    except subprocess.TimeoutExpired:
        return [{"kind": "missing", "system": system, "workload": "W1", "label": f"{system}: every workload",
                 "reason": f"timed out after {_TIMEOUT_S} s"}]
    records = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0:
        records.append({"kind": "missing", "system": system, "workload": "W1" if not records else "W3",
                        "label": f"{system}: remaining workloads",
                        "reason": f"the peer module exited with code {done.returncode} (its stderr is above)"})
    return records


def main(argv: list[str] | None = None) -> int:
    """Measure the floor and every peer; write the JSON lines; returns 0."""
    parser = argparse.ArgumentParser(prog="python -m bench.peers")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", nargs="*", default=list(PEERS), choices=PEERS)
    parser.add_argument("--out", type=Path, default=RESULTS / "peers.jsonl")
    args = parser.parse_args(argv)
    mode = "quick" if args.quick else "full"
    args.in_flight, args.workers, args.repeats = (64, 2, 3) if args.quick else (256, 4, 3)
    args.fanout = 200 if args.quick else 1000
    print("bench-peers: floor ...", file=sys.stderr, flush=True)
    n = 2000 if args.quick else 20_000
    records = [{**machine_facts(PACKAGES), "invocation": "peers"}]
    records += [{**r, "system": r["system"]} for r in measure_floor_suite(
        pingpong_n=n, pipelined_n=n, depth=args.in_flight, echoes=args.workers, fanout=args.fanout, repeats=args.repeats)]
    # The floor of this invocation is labelled apart from ontoflow's own.
    for r in records:
        if r.get("kind") == "figure":
            r["label"] = r["label"].replace("floor ", "floor (peers run) ", 1)
    for module in args.only:
        records += _run_peer(module, _SIZES[mode].get(module, _SIZES[mode]["default"]), args)
    attach_ratios(records)
    # This floor joins the merged table under its own name, beside ontoflow's invocation's.
    for r in records:
        if r.get("system", "").startswith("floor-"):
            r["system"] += " (peers run)"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w") as fh:
        write_jsonl(records, fh)
    print(f"bench-peers: wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
