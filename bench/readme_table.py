"""Copy the README's "Performance" rows from ``bench/results/latest.md`` (no figure typed).

    python -m bench.readme_table          # rewrites the block between the invocation lines
                                          # and the table's end in README.md

Kept: the invocation lines and every row except the peers run's own floors, W1's p50/p99 rows,
and the memory rows other than the 10,000-run tracemalloc one (the full table has them all).
Between ``<!-- multihost -->`` and ``<!-- /multihost -->`` it writes the table of
``bench/results/multihost.jsonl`` (``python -m bench.multihost_bench > ...``): throughput through
the daemon per worker count with its floor ratios (plain runs, then runs carrying inputs), and
the detection times of a killed worker.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

__all__ = ["main", "multihost_rows", "readme_rows"]

_ROOT = Path(__file__).resolve().parent.parent
_SKIP = (
    re.compile(r"\(peers run\)"),
    re.compile(r"per run p(50|99)"),
    re.compile(r"memory per run in flight, (1,000|100,000) runs"),
    re.compile(r"\(RSS delta\)"),
)


def readme_rows(latest: str) -> list[str]:
    """The invocation lines, a blank line, and the kept table lines of ``latest``."""
    lines = latest.splitlines()
    invocations = [line for line in lines if line.startswith("- ") and " invocation, " in line]
    table = [line for line in lines if line.startswith("|") and not any(p.search(line) for p in _SKIP)]
    return invocations + [""] + table


def multihost_rows(jsonl: str) -> list[str]:
    """A Markdown table of the multihost bench's records (throughput, then detection)."""
    records = [json.loads(line) for line in jsonl.splitlines() if line.strip()]
    rows = []
    for m in records:
        if m.get("name") == "multihost_machine":
            steal = "" if m.get("steal_pct") is None else f", {m['steal_pct']:.1f}% of CPU time stolen by the hypervisor while measuring"
            rows += [f"Measured {m['date']}, {m['cores']} cores{steal}.", ""]
    rows += ["| through the daemon | steps/s, median (min-max) | vs sync floor | vs asyncio floor |", "|---|---|---|---|"]
    throughput = [r for r in records if r.get("name") in ("multihost_throughput", "multihost_inputs_throughput")]
    for r in sorted(throughput, key=lambda r: r["name"] == "multihost_inputs_throughput"):  # stable: plain rows first
        spread = f" ({r['min_steps_per_s']:,.0f}-{r['max_steps_per_s']:,.0f})" if "min_steps_per_s" in r else ""
        batches = f", {r['repeats']} x {r['runs']:,} runs" if "repeats" in r else ""
        carrying = f", each carrying {r['inputs']} inputs checked at submit" if r.get("inputs") else ""
        rows.append(f"| {r['workers']} worker process(es) x {r['slots']} slots, {r['in_flight']} runs in flight"
                    f"{batches}{carrying} | {r['steps_per_s']:,.0f}{spread} | {r['vs_sync_floor']:.2f}x | {r['vs_asyncio_floor']:.2f}x |")
    detections = [r for r in records if r.get("name") == "multihost_detection"]
    if detections:
        times = sorted(r["detection_ms"] for r in detections)
        first = detections[0]
        rows.append(f"| killed worker detected (heartbeat {first['heartbeat_ms']} ms x {first['liveness']}, bound "
                    f"{first['bound_ms']} ms) | {times[0]:.0f}-{times[-1]:.0f} ms over {len(times)} kills | | |")
    return rows


def _replace_between(lines: list[str], start: str, end: str, new: list[str]) -> list[str]:
    try:
        i, j = lines.index(start), lines.index(end)
    except ValueError:
        return lines
    return lines[: i + 1] + new + lines[j:]


def main() -> int:
    """Rewrite README.md's performance block; returns 0, or 1 when its markers are missing."""
    readme = _ROOT / "README.md"
    text = readme.read_text()
    latest = (_ROOT / "bench" / "results" / "latest.md").read_text()
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith("- ontoflow invocation, "))
        end = next(
            i for i in range(start, len(lines))
            if lines[i].startswith("|") and (i + 1 == len(lines) or not lines[i + 1].startswith("|"))
        )
    except StopIteration:
        print("README.md has no performance block to replace", file=sys.stderr)
        return 1
    lines = lines[:start] + readme_rows(latest) + lines[end + 1 :]
    multihost = _ROOT / "bench" / "results" / "multihost.jsonl"
    if multihost.exists():
        lines = _replace_between(lines, "<!-- multihost -->", "<!-- /multihost -->", multihost_rows(multihost.read_text()))
    readme.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
